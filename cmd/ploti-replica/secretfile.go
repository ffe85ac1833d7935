package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// secretFile is a webhook secret's file, made before the webhook: it must
// not exist (it could hold the only copy of an older secret) and must be
// writable, which creating it proves.
type secretFile struct {
	path string
	f    *os.File
	kept bool
}

// reserveSecretFile creates path, empty and mode 0600, failing when it
// exists or cannot be created.
func reserveSecretFile(path string) (*secretFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("--secret-file %s exists: it may hold the only copy of another webhook's secret; move it away or name a new file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("--secret-file %s cannot be written: %w", path, err)
	}
	return &secretFile{path: path, f: f}, nil
}

// keep writes the secret and closes the file.
func (s *secretFile) keep(secret string) error {
	_, err := s.f.WriteString(secret + "\n")
	if err == nil {
		err = s.f.Sync()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(s.path)
		return fmt.Errorf("write the secret to %s: %w", s.path, err)
	}
	s.kept = true
	return nil
}

// abandon removes the file unless it keeps a secret.
func (s *secretFile) abandon() {
	if s.kept {
		return
	}
	s.f.Close()
	os.Remove(s.path)
}
