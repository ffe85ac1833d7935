package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// API is what the replica needs from the Ploti API client (*fetch.Client).
type API interface {
	Manifest(ctx context.Context, subscriptionID, asOf string) (*ploti.Manifest, error)
	Events(ctx context.Context, subscriptionID, cursor string, limit int, types []string) (*ploti.EventPage, error)
	Dataset(ctx context.Context, datasetID string) (*ploti.Dataset, error)
	DatasetsPage(ctx context.Context, q fetch.DatasetsQuery) (*ploti.DatasetPage, error)
	Version(ctx context.Context, datasetID string, version int) (*ploti.Version, error)
	VersionByLink(ctx context.Context, link string) (*ploti.Version, error)
	Links(ctx context.Context, datasetID string, version int, files []string) (*ploti.Version, error)
	Schema(ctx context.Context, datasetID string, version int) (*ploti.Schema, error)
	Download(ctx context.Context, f ploti.File, name string, refresh func(ctx context.Context) (ploti.File, error)) (string, error)
}

// source adapts the API to apply.Source: it maps the API's errors to
// apply's (gone, bad input) and names downloaded files.
type source struct {
	api API
	// stream is the API client's Stream, when it has one; streamMin is
	// the least size of a snapshot loaded as it downloads
	// (Options.StreamMin), zero or negative: none.
	stream    streamAPI
	streamMin int64

	mu    sync.Mutex
	fresh map[string]*ploti.Version // links signed again, by dataset@version (see refresh)
}

// classify maps the API's errors for the version an event named (its
// links.version, or the version it names): there, and only there, a 409
// or a 404 means the dataset has since left the subscriptions
// (feed-events.txt, "Reading the log"; docs/wire.md 8.5).
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case fetch.IsDatasetGone(err):
		return fmt.Errorf("%w: %w", apply.ErrGone, err)
	case errors.Is(err, fetch.ErrExpired):
		return fmt.Errorf("%w: %w", apply.ErrExpired, err)
	case errors.Is(err, fetch.ErrChecksum), errors.Is(err, fetch.ErrSize), errors.Is(err, fetch.ErrNotParquet),
		errors.Is(err, fetch.ErrMalformed):
		return fmt.Errorf("%w: %w", apply.ErrBadInput, err)
	}
	return err
}

// classifyOther maps the API's errors for every other call (the dataset,
// its current version, a schema, a link refresh, a download): a 409 or a
// 404 there is an error of the dataset, which fails and is retried by the
// next sync, never a silent skip until feed.dataset.removed.
func classifyOther(err error) error {
	if fetch.IsDatasetGone(err) {
		return err
	}
	return classify(err)
}

func (s *source) Version(ctx context.Context, datasetID string, version int, link string) (*ploti.Version, error) {
	var v *ploti.Version
	var err error
	if link != "" {
		v, err = s.api.VersionByLink(ctx, link)
		if errors.Is(err, fetch.ErrForeignLink) {
			v, err = s.api.Version(ctx, datasetID, version)
		}
	} else {
		v, err = s.api.Version(ctx, datasetID, version)
	}
	if err != nil {
		return nil, classify(withoutCall(err))
	}
	if v.DatasetID != "" && v.DatasetID != datasetID || v.Version != version {
		return nil, fmt.Errorf("%w: version answer names %s v%d, asked for %s v%d", apply.ErrBadInput, v.DatasetID, v.Version, datasetID, version)
	}
	return v, nil
}

func (s *source) Current(ctx context.Context, datasetID string) (int, error) {
	d, err := s.api.Dataset(ctx, datasetID)
	if err != nil {
		return 0, classifyOther(withoutCall(err))
	}
	if d.Current == nil {
		return 0, apply.ErrNoCurrent
	}
	return d.Current.Version, nil
}

func (s *source) Schema(ctx context.Context, v *ploti.Version) (*ploti.Schema, error) {
	if v.Files.Schema != nil && v.Files.Schema.URL != "" {
		name := fileName(v.DatasetID, v.Version, "schema", 0, ".json")
		path, err := s.api.Download(ctx, *v.Files.Schema, name, s.refresh(v, "schema", 0))
		if err != nil {
			return nil, classifyOther(err)
		}
		defer os.Remove(path)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var sc ploti.Schema
		if err := json.Unmarshal(b, &sc); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", apply.ErrBadInput, name, err)
		}
		return &sc, nil
	}
	sc, err := s.api.Schema(ctx, v.DatasetID, v.Version)
	return sc, classifyOther(withoutCall(err))
}

func (s *source) files(v *ploti.Version, kind string) []ploti.File { return versionFiles(v, kind) }

// versionFiles are a version's files of one kind (none for a nil version).
func versionFiles(v *ploti.Version, kind string) []ploti.File {
	if v == nil {
		return nil
	}
	switch kind {
	case "snapshot":
		return v.Files.Snapshot
	case "changes":
		return v.Files.Changes
	case "idMap":
		if v.Files.IDMap != nil {
			return []ploti.File{*v.Files.IDMap}
		}
	case "schema":
		if v.Files.Schema != nil {
			return []ploti.File{*v.Files.Schema}
		}
	}
	return nil
}

// refresh asks the API for a fresh link to the same file. One links call
// signs every file of the version ("one links call for several
// files"), and the answer serves the version's other files whose links
// fail after it, until one of its own links fails too.
func (s *source) refresh(v *ploti.Version, kind string, i int) func(ctx context.Context) (ploti.File, error) {
	failed := ""
	if fs := s.files(v, kind); i < len(fs) {
		failed = fs[i].URL
	}
	key := fmt.Sprintf("%s@%d", v.DatasetID, v.Version)
	return func(ctx context.Context) (ploti.File, error) {
		s.mu.Lock()
		fresh := s.fresh[key]
		s.mu.Unlock()
		if fs := s.files(fresh, kind); fresh == nil || i >= len(fs) || fs[i].URL == failed {
			var err error
			if fresh, err = s.api.Links(ctx, v.DatasetID, v.Version, kinds(v)); err != nil {
				return ploti.File{}, classifyOther(withoutCall(err))
			}
			s.mu.Lock()
			if s.fresh == nil {
				s.fresh = map[string]*ploti.Version{}
			}
			s.fresh[key] = fresh
			s.mu.Unlock()
		}
		fs := s.files(fresh, kind)
		if i >= len(fs) {
			return ploti.File{}, fmt.Errorf("%w: fresh links for %s v%d have no %s part %d", apply.ErrBadInput, v.DatasetID, v.Version, kind, i)
		}
		failed = fs[i].URL
		return fs[i], nil
	}
}

// kinds names the files a version has that the replica downloads.
func kinds(v *ploti.Version) []string {
	var out []string
	for _, k := range []string{"snapshot", "changes", "idMap", "schema"} {
		if len(versionFiles(v, k)) > 0 {
			out = append(out, k)
		}
	}
	return out
}

func (s *source) Download(ctx context.Context, v *ploti.Version, kind string) ([]string, error) {
	var paths []string
	for i, f := range s.files(v, kind) {
		p, err := s.api.Download(ctx, f, fileName(v.DatasetID, v.Version, kind, i, ".parquet"), s.refresh(v, kind, i))
		if err != nil {
			s.Discard(paths)
			return nil, classifyOther(err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// newSource is the executor's source on api; client is the API client
// under it, whose Stream it uses when it has one.
func newSource(api, client API, streamMin int64) *source {
	st, _ := client.(streamAPI)
	return &source{api: api, stream: st, streamMin: streamMin}
}

// streamAPI is an API that can hand a file over while it downloads, its
// footer first (*fetch.Client).
type streamAPI interface {
	Stream(ctx context.Context, f ploti.File, name string, refresh func(context.Context) (ploti.File, error)) (*fetch.Stream, error)
}

// Stream is apply.Streamer: a version's snapshot of one part of at least
// streamMin bytes is streamed when the API can (the link's server answers
// Range requests); nil for any other.
func (s *source) Stream(ctx context.Context, v *ploti.Version) (apply.Stream, error) {
	api, fs := s.stream, v.Files.Snapshot
	if api == nil || s.streamMin <= 0 || len(fs) != 1 || fs[0].Bytes == nil || *fs[0].Bytes < s.streamMin {
		return nil, nil
	}
	st, err := api.Stream(ctx, fs[0], fileName(v.DatasetID, v.Version, "snapshot", 0, ".parquet"), s.refresh(v, "snapshot", 0))
	if err != nil {
		return nil, classifyOther(err)
	}
	return st, nil
}

func (s *source) Discard(paths []string) {
	for _, p := range paths {
		os.Remove(p)
	}
}

// fileName is a safe spool name for one file of a version, one name for
// one dataset id: dataset ids are opaque strings, used exactly as given
// (docs/wire.md 2), so two ids that read the same once made safe ("ds.a",
// "ds_a"), or once a case-insensitive file system folds them ("ds_A",
// "ds_a"), must not share a spool file (their concurrent loads would
// read each other's files). Such an id gets a hash of itself after a "~",
// which no safe id holds. A long id is cut to maxNamePart bytes with its
// hash, so that the name fits a file system's 255.
func fileName(datasetID string, version int, kind string, part int, ext string) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, datasetID)
	stem, tag := cutTag(datasetID, safe, safe, maxNamePart)
	return fmt.Sprintf("%s%s-v%d-%s-%d%s", stem, tag, version, kind, part, ext)
}

// Describe is apply.Describer: the dataset's title, place and topic.
func (s *source) Describe(ctx context.Context, datasetID string) (*ploti.Dataset, error) {
	return s.api.Dataset(ctx, datasetID)
}
