// Package logs holds the few helpers the library's packages share to log
// through log/slog: a nil logger that discards, an error attribute that a
// nil error leaves out, and a duration as a count of milliseconds.
package logs

import (
	"log/slog"
	"time"
)

// KeyError is the key of an error's attribute.
const KeyError = "error"

var discard = slog.New(slog.DiscardHandler)

// OrDiscard is l, or a logger that writes nothing when l is nil: the
// options' nil Logger means no logs.
func OrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return discard
	}
	return l
}

// Err is err under the key "error"; a nil err is the empty attribute,
// which handlers leave out (the line says nothing of an error it lacks).
func Err(err error) slog.Attr {
	return AnErr(KeyError, err)
}

// AnErr is err under key, or the empty attribute when err is nil.
func AnErr(key string, err error) slog.Attr {
	if err == nil {
		return slog.Attr{}
	}
	return slog.Any(key, err)
}

// Ms is d as an integer count of milliseconds under key (whose name says
// so: "duration_ms", "retry_in_ms").
func Ms(key string, d time.Duration) slog.Attr {
	return slog.Int64(key, d.Milliseconds())
}
