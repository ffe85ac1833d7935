//go:build !linux

package duckdb

import (
	"errors"
	"os"
)

// cloneFile is Linux's FICLONE elsewhere: not offered, so Publish copies.
func cloneFile(dst, src *os.File) error { return errors.ErrUnsupported }
