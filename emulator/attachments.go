package emulator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SetAttachments replaces the files Ploti holds for a dataset: manifests and
// versions sign links to the new ones from now on (to every version, as
// AddDataset's do).
func (e *Emulator) SetAttachments(datasetID string, list []Attachment) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.datasetLocked("set attachments", datasetID)
	if err != nil {
		return err
	}
	d.attachSet++
	d.attachments = nil
	if err := e.writeAttachments(d, list); err != nil {
		return fmt.Errorf("set attachments of %s: %w", datasetID, err)
	}
	return nil
}

// writeAttachments writes a dataset's attachment files and adds them to
// d.attachments; each set goes to a folder of its own, so a link signed
// before keeps serving the file it named.
func (e *Emulator) writeAttachments(d *dataset, list []Attachment) error {
	for _, a := range list {
		name := strings.ReplaceAll(safeName(a.Name), "..", "__") // a name is no path
		rel := fmt.Sprintf("files/%s/attachments/%d/%d-%s", d.tag, d.attachSet, len(d.attachments), name)
		path := e.abs(rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, a.Data, 0o644); err != nil {
			return err
		}
		f, err := describeFile(rel, path)
		if err != nil {
			return err
		}
		f.name, f.contentType = a.Name, a.ContentType
		d.attachments = append(d.attachments, f)
	}
	return nil
}
