package replica

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// DefaultAttachmentsInlineMax is the largest attachment kept in the
// _ploti.attachments table itself when Options.AttachmentsInlineMax is 0.
const DefaultAttachmentsInlineMax = 1 << 20

// attachmentsDir is the folder, beside the replica file, that keeps the
// attachments larger than the inline limit: <file>.attachments.
func (r *Replica) attachmentsDir() string { return r.db.Path() + ".attachments" }

// keepAttachments keeps the attachments of the version each feed dataset
// holds ("Each comes with that version and signed links to its snapshot,
// schema and attachments, the files Ploti holds for the dataset"): those
// not kept yet are downloaded and verified (bytes, sha256), those kept
// already (same name and sha256) stay. It runs after the sync's own
// commits, as housekeeping, and commits only when something changed: a
// dataset's first check, attachments added, changed or dropped, a
// failure (decision 13: a sync's last commit stays its data's). A failure
// keeps the attachments kept before, is recorded in
// _ploti.attachment_syncs and in SyncResult.AttachmentsFailed, and the
// next sync tries again. The links come from the manifests and versions
// the sync read: a version loaded in an earlier sync is looked at again
// only after a failure.
func (r *Replica) keepAttachments(ctx context.Context, res *SyncResult) {
	if ctx.Err() != nil {
		return
	}
	if err := r.keepAttachmentsOnce(ctx, res); err != nil && ctx.Err() == nil {
		r.log.Warn("could not keep attachments; the next sync tries again", logs.Err(err))
	}
}

// attachmentPlan is what keeping one dataset's attachments came to.
type attachmentPlan struct {
	d    *storage.Dataset
	list []storage.Attachment
	err  error
}

func (r *Replica) keepAttachmentsOnce(ctx context.Context, res *SyncResult) error {
	cands, ids, err := r.attachmentCandidates(ctx)
	if err != nil {
		return err
	}
	// What is kept, read once for all (a query a dataset).
	kept, err := r.db.AttachmentsOf(ctx, ids, true)
	if err != nil {
		return err
	}
	var plans []attachmentPlan
	for _, c := range cands {
		if err := r.stopped(); err != nil {
			break
		}
		list, changed, err := r.attachmentsOf(ctx, c.d, c.links, c.seen, kept[c.d.ID])
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || changed || !c.checked || c.failed {
			plans = append(plans, attachmentPlan{d: c.d, list: list, err: err})
		}
	}
	if len(plans) == 0 {
		return nil
	}
	return r.putAttachmentPlans(ctx, res, plans)
}

// attachmentCandidate is a dataset whose attachments a sync looks at: its
// links when read this sync (seen), whether they were ever checked, and
// whether the last check failed.
type attachmentCandidate struct {
	d       *storage.Dataset
	links   []ploti.Attachment
	seen    bool
	checked bool
	failed  bool
}

// attachmentCandidates lists the datasets whose attachments to look at,
// with their ids: the feed's datasets held at a version, read this sync
// or not yet checked (or whose last check failed).
func (r *Replica) attachmentCandidates(ctx context.Context) ([]attachmentCandidate, []string, error) {
	all, err := r.db.Datasets(ctx)
	if err != nil {
		return nil, nil, err
	}
	syncs, err := r.db.AttachmentSyncs(ctx)
	if err != nil {
		return nil, nil, err
	}
	var cands []attachmentCandidate
	var ids []string
	for _, d := range all {
		if d.Version == 0 || d.Source == storage.SourceWatch || (d.Status != storage.StatusCurrent && d.Status != storage.StatusHeld) {
			continue
		}
		s, checked := syncs[d.ID]
		links, seen := r.memo.get(d.ID, d.Version)
		if !seen && checked && s.Error == "" {
			continue // not read this sync: nothing new to look at
		}
		cands = append(cands, attachmentCandidate{d, links, seen, checked, s.Error != ""})
		ids = append(ids, d.ID)
	}
	return cands, ids, nil
}

// putAttachmentPlans writes the attachment sets planned in one
// transaction, then reports the failed ones and prunes the files the
// others no longer keep.
func (r *Replica) putAttachmentPlans(ctx context.Context, res *SyncResult, plans []attachmentPlan) error {
	sets := make([]storage.AttachmentSet, len(plans))
	for i, p := range plans {
		sets[i] = storage.AttachmentSet{DatasetID: p.d.ID, Version: p.d.Version, List: p.list}
		if p.err != nil {
			sets[i].Err = p.err.Error()
		}
	}
	if err := r.db.Update(ctx, func(tx *storage.Tx) error { return tx.PutAttachmentSets(ctx, sets) }); err != nil {
		return err
	}
	for _, p := range plans {
		if p.err != nil {
			res.AttachmentsFailed = appendOnce(res.AttachmentsFailed, p.d.ID)
			res.AttachmentFailures = append(res.AttachmentFailures, Failure{DatasetID: p.d.ID, Reason: p.err.Error()})
			r.log.Warn("attachments not kept; the next sync tries again",
				slog.String("dataset", p.d.ID), slog.Int("version", p.d.Version), logs.Err(p.err))
			continue
		}
		r.pruneAttachmentFiles(p.d.ID, p.list)
	}
	return nil
}

// attachmentsOf gives the attachments to keep for the version d holds,
// from its links (asked for when not seen this sync): those kept already
// with the same name and sha256 stay as they are, the others are
// downloaded. changed tells whether the rows differ from those kept. An
// attachment whose download fails is left out (or keeps the row kept
// before under its name), and the error names it beside a list of the
// others: a list and an error together are kept as far as they go.
func (r *Replica) attachmentsOf(ctx context.Context, d *storage.Dataset, links []ploti.Attachment, seen bool, kept []storage.Attachment) (list []storage.Attachment, changed bool, err error) {
	if !seen {
		if links, err = r.freshAttachmentLinks(ctx, d.ID, d.Version); err != nil {
			return nil, false, err
		}
	}
	out := []storage.Attachment{}
	var failed []error
	names := map[string]bool{}
	for i, a := range links {
		if a.Name == "" || names[a.Name] {
			return nil, false, fmt.Errorf("attachments of %s v%d: an attachment without a name, or two named %q", d.ID, d.Version, a.Name)
		}
		names[a.Name] = true
		if k, ok := reusable(kept, a.Name, a.SHA256); ok && k.ContentType == a.ContentType {
			out = append(out, k)
			continue
		}
		got, err := r.fetchAttachment(ctx, d, i, a)
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, err
			}
			// This one fails alone: the version's others are kept, and
			// the one kept before under its name (an older version's)
			// stays until a sync fetches it whole.
			failed = append(failed, err)
			if k, ok := keptNamed(kept, a.Name); ok {
				out = append(out, k)
			}
			continue
		}
		if k, ok := reusable(kept, got.Name, got.SHA256); ok && k.ContentType == got.ContentType {
			if got.Path != k.Path {
				r.discardAttachmentFile(got) // the same content, fetched again: keep the row as it is
			}
			out = append(out, k)
			continue
		}
		out, changed = append(out, got), true
	}
	if len(failed) > 0 {
		return out, true, fmt.Errorf("attachments of %s v%d: %d of %d not kept, the others are: %w", d.ID, d.Version, len(failed), len(links), errors.Join(failed...))
	}
	return out, changed || len(out) != len(kept), nil
}

// keptNamed finds the kept attachment of a name, of whatever version.
func keptNamed(kept []storage.Attachment, name string) (storage.Attachment, bool) {
	for _, k := range kept {
		if k.Name == name {
			return k, true
		}
	}
	return storage.Attachment{}, false
}

// reusable finds a kept attachment of the same name and content: its
// sha256 is the one given (a link without one is fetched, then compared).
func reusable(kept []storage.Attachment, name, sum string) (storage.Attachment, bool) {
	for _, k := range kept {
		if k.Name == name && sum != "" && strings.EqualFold(k.SHA256, sum) {
			return k, true
		}
	}
	return storage.Attachment{}, false
}

// discardAttachmentFile removes the file of an attachment not kept.
func (r *Replica) discardAttachmentFile(a storage.Attachment) {
	if a.Path != "" {
		os.Remove(filepath.Join(filepath.Dir(r.db.Path()), filepath.FromSlash(a.Path)))
	}
}

// fetchAttachment downloads one attachment (verified against the link's
// bytes and sha256), and keeps it inline or as a file beside the replica.
func (r *Replica) fetchAttachment(ctx context.Context, d *storage.Dataset, i int, a ploti.Attachment) (storage.Attachment, error) {
	refresh := func(ctx context.Context) (ploti.File, error) {
		fresh, err := r.freshAttachmentLinks(ctx, d.ID, d.Version)
		if err != nil {
			return ploti.File{}, err
		}
		for _, f := range fresh {
			if f.Name == a.Name {
				return ploti.File{URL: f.URL, Bytes: f.Bytes, SHA256: f.SHA256}, nil
			}
		}
		return ploti.File{}, fmt.Errorf("fresh links of %s v%d have no attachment %q", d.ID, d.Version, a.Name)
	}
	path, err := r.api.Download(ctx, ploti.File{URL: a.URL, Bytes: a.Bytes, SHA256: a.SHA256}, fileName(d.ID, d.Version, "attachment", i, ".bin"), refresh)
	if err != nil {
		return storage.Attachment{}, fmt.Errorf("download attachment %q of %s v%d: %w", a.Name, d.ID, d.Version, err)
	}
	defer os.Remove(path)
	sum, n, err := hashFile(path)
	if err != nil {
		return storage.Attachment{}, err
	}
	out := storage.Attachment{DatasetID: d.ID, Version: d.Version, Name: a.Name, ContentType: a.ContentType, Bytes: n, SHA256: sum}
	if max := r.inlineMax(); max >= 0 && n <= max {
		out.Content, err = os.ReadFile(path)
		return out, err
	}
	rel := filepath.Join(filepath.Base(r.attachmentsDir()), datasetFolder(d.ID), "v"+strconv.Itoa(d.Version), attachmentFile(a.Name))
	dst := filepath.Join(filepath.Dir(r.db.Path()), rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return storage.Attachment{}, fmt.Errorf("keep attachment %q of %s: %w", a.Name, d.ID, err)
	}
	if err := os.Rename(path, dst); err != nil {
		return storage.Attachment{}, fmt.Errorf("keep attachment %q of %s: %w", a.Name, d.ID, err)
	}
	out.Path = filepath.ToSlash(rel)
	return out, nil
}

// inlineMax is the largest attachment kept inline; -1: none is. A
// database (not a file) keeps every one inline: its readers are on other
// machines, where no folder beside it is.
func (r *Replica) inlineMax() int64 {
	_, file := r.db.Engine().(storage.File)
	switch m := r.opts.AttachmentsInlineMax; {
	case !file:
		return math.MaxInt64
	case m == 0:
		return DefaultAttachmentsInlineMax
	case m < 0:
		return -1
	default:
		return m
	}
}

// pruneAttachmentFiles removes the files of a dataset's earlier
// attachments once the rows that named them are replaced.
func (r *Replica) pruneAttachmentFiles(datasetID string, keep []storage.Attachment) {
	base := filepath.Dir(r.db.Path())
	want := map[string]bool{}
	for _, a := range keep {
		if a.Path != "" {
			want[filepath.Clean(filepath.Join(base, filepath.FromSlash(a.Path)))] = true
		}
	}
	root := filepath.Join(r.attachmentsDir(), datasetFolder(datasetID))
	filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && !want[filepath.Clean(p)] {
			os.Remove(p)
		}
		return nil
	})
	// Remove the folders left empty, deepest first (Remove refuses the others).
	var dirs []string
	filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i])
	}
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// datasetFolder is the folder of a dataset's attachment files, one per
// dataset id: ids are opaque strings, used exactly as given (docs/wire.md
// 2), so an id that safeFileName changes ("ds a" reads as "ds_a"), or that
// a case-insensitive file system would fold ("ds_A"), gets a hash of
// itself after a "~", which no id kept as it is holds. Two datasets
// sharing a folder overwrote, and pruned, each other's files.
func datasetFolder(id string) string {
	safe := safeFileName(id)
	stem, tag := cutTag(id, safe, safe, maxNamePart)
	return stem + tag
}

// attachmentFile is the file name of an attachment in its version's
// folder, one per attachment name: a name that safeFileName changes ("a
// b.pdf" reads as "a_b.pdf"), or that a case-insensitive file system
// would fold, gets a hash of itself after a "~", before its extension
// (which says its format, as its contentType does). Two attachments of a
// version sharing a file kept one's bytes under the other's name.
func attachmentFile(name string) string {
	safe := safeFileName(name)
	ext := filepath.Ext(safe)
	if len(ext) > maxExt {
		ext = "" // no format's extension: a part of the name
	}
	stem, tag := cutTag(name, safe, strings.TrimSuffix(safe, ext), maxNamePart)
	return stem + tag + ext
}

// Names from the network are cut to fit a file name (255 bytes on the
// common file systems, with room for the spool's "-v12-snapshot-3.parquet"
// and ".part"): maxNamePart bytes of a dataset id or an attachment's name,
// its hash included, and an extension of at most maxExt.
const (
	maxNamePart = 128
	maxExt      = 16
)

// nameTag keeps apart the names that safe, a file name made from s, may
// share with others: "" when safe is s and s has no capital (a
// case-insensitive file system would fold it), else "~" and a hash of s,
// which no name kept as it is holds.
func nameTag(s, safe string) string {
	if safe == s && strings.ToLower(s) == s {
		return ""
	}
	return hashTag(s)
}

// hashTag is "~" and a hash of s.
func hashTag(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "~" + hex.EncodeToString(sum[:8])
}

// cutTag is stem (safe, a file name made from s, or its start) and its
// nameTag, cut to max bytes together: a stem that does not fit is cut,
// and then tagged with a hash of s whatever s is, so that two names alike
// in their first max bytes stay apart. safe is ASCII: any cut is whole
// characters.
func cutTag(s, safe, stem string, max int) (string, string) {
	tag := nameTag(s, safe)
	if len(stem)+len(tag) <= max {
		return stem, tag
	}
	tag = hashTag(s)
	return stem[:max-len(tag)], tag
}

// safeFileName keeps a name from the network to one path segment.
func safeFileName(s string) string {
	out := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, s)
	if out = strings.TrimLeft(out, "."); out == "" {
		out = "_"
	}
	return out
}

func (r *Replica) freshAttachmentLinks(ctx context.Context, datasetID string, version int) ([]ploti.Attachment, error) {
	v, err := r.api.Links(ctx, datasetID, version, []string{"attachments"})
	if err != nil {
		return nil, fmt.Errorf("sign attachment links of %s v%d: %w", datasetID, version, err)
	}
	return v.Files.Attachments, nil
}

// linkMemo is the API with a memory of the attachment links of the
// versions it answered with (manifests, versions): keeping a version's
// attachments then needs no call of its own. Forget clears it (links last
// an hour; a sync starts afresh).
type linkMemo struct {
	API
	mu    sync.Mutex
	links map[string][]ploti.Attachment // "dataset\x00version"
}

func memoKey(datasetID string, version int) string { return datasetID + "\x00" + strconv.Itoa(version) }

func (m *linkMemo) put(datasetID string, version int, list []ploti.Attachment) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.links == nil {
		m.links = map[string][]ploti.Attachment{}
	}
	if list == nil {
		list = []ploti.Attachment{}
	}
	m.links[memoKey(datasetID, version)] = list
}

func (m *linkMemo) get(datasetID string, version int) ([]ploti.Attachment, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	list, ok := m.links[memoKey(datasetID, version)]
	return list, ok
}

func (m *linkMemo) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.links = nil
}

// Manifest remembers the attachment links of the datasets it lists.
func (m *linkMemo) Manifest(ctx context.Context, subscriptionID, asOf string) (*ploti.Manifest, error) {
	mf, err := m.API.Manifest(ctx, subscriptionID, asOf)
	if err == nil {
		for _, d := range mf.Datasets {
			m.put(d.DatasetID, d.Version, d.Files.Attachments)
		}
	}
	return mf, err
}

// Version remembers the version's attachment links.
func (m *linkMemo) Version(ctx context.Context, datasetID string, version int) (*ploti.Version, error) {
	v, err := m.API.Version(ctx, datasetID, version)
	if err == nil {
		m.put(v.DatasetID, v.Version, v.Files.Attachments)
	}
	return v, err
}

// VersionByLink remembers the version's attachment links.
func (m *linkMemo) VersionByLink(ctx context.Context, link string) (*ploti.Version, error) {
	v, err := m.API.VersionByLink(ctx, link)
	if err == nil {
		m.put(v.DatasetID, v.Version, v.Files.Attachments)
	}
	return v, err
}
