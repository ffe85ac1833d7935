package main

// zerologHandler writes the library's log/slog records through the CLI's
// zerolog logger, so that a line reads as the CLI always wrote it: zerolog
// JSON or console, "message", lowercase levels.

import (
	"context"
	"log/slog"

	"github.com/rs/zerolog"
)

// zerologHandler is a slog.Handler backed by a zerolog.Logger. Groups are
// flattened: an attribute k in group g is written as "g.k".
type zerologHandler struct {
	l      zerolog.Logger
	pre    []slog.Attr // WithAttrs's, keys already prefixed
	prefix string      // WithGroup's groups, "g." each
}

func newZerologHandler(l zerolog.Logger) *zerologHandler {
	return &zerologHandler{l: l}
}

// zerologLevel is l's zerolog level: slog's levels between two named ones
// take the lower.
func zerologLevel(l slog.Level) zerolog.Level {
	switch {
	case l < slog.LevelInfo:
		return zerolog.DebugLevel
	case l < slog.LevelWarn:
		return zerolog.InfoLevel
	case l < slog.LevelError:
		return zerolog.WarnLevel
	}
	return zerolog.ErrorLevel
}

// Enabled honours the logger's level (and zerolog's global one).
func (h *zerologHandler) Enabled(_ context.Context, l slog.Level) bool {
	zl := zerologLevel(l)
	return zl >= h.l.GetLevel() && zl >= zerolog.GlobalLevel()
}

func (h *zerologHandler) Handle(_ context.Context, r slog.Record) error {
	e := h.l.WithLevel(zerologLevel(r.Level))
	if e == nil {
		return nil
	}
	for _, a := range h.pre {
		e = addAttr(e, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		e = addAttr(e, h.prefix, a)
		return true
	})
	e.Msg(r.Message)
	return nil
}

func (h *zerologHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	c := *h
	c.pre = append(h.pre[:len(h.pre):len(h.pre)], flatten(h.prefix, as)...)
	return &c
}

func (h *zerologHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix = h.prefix + name + "."
	return &c
}

// flatten resolves as and lifts groups' attributes to the top, their keys
// prefixed, leaving out the empty attributes slog's handlers ignore.
func flatten(prefix string, as []slog.Attr) []slog.Attr {
	var out []slog.Attr
	for _, a := range as {
		a.Value = a.Value.Resolve()
		switch {
		case a.Equal(slog.Attr{}):
		case a.Value.Kind() == slog.KindGroup:
			p := prefix
			if a.Key != "" {
				p += a.Key + "."
			}
			out = append(out, flatten(p, a.Value.Group())...)
		default:
			a.Key = prefix + a.Key
			out = append(out, a)
		}
	}
	return out
}

// addAttr writes a (and a group's attributes, flattened) to e under
// prefix; a duration is written as an integer count of milliseconds.
func addAttr(e *zerolog.Event, prefix string, a slog.Attr) *zerolog.Event {
	if a.Value = a.Value.Resolve(); a.Value.Kind() != slog.KindGroup {
		if a.Equal(slog.Attr{}) {
			return e
		}
		return addValue(e, prefix+a.Key, a.Value)
	}
	for _, f := range flatten(prefix, []slog.Attr{a}) {
		e = addValue(e, f.Key, f.Value)
	}
	return e
}

func addValue(e *zerolog.Event, k string, v slog.Value) *zerolog.Event {
	switch v.Kind() {
	case slog.KindString:
		return e.Str(k, v.String())
	case slog.KindInt64:
		return e.Int64(k, v.Int64())
	case slog.KindUint64:
		return e.Uint64(k, v.Uint64())
	case slog.KindFloat64:
		return e.Float64(k, v.Float64())
	case slog.KindBool:
		return e.Bool(k, v.Bool())
	case slog.KindDuration:
		return e.Int64(k, v.Duration().Milliseconds())
	case slog.KindTime:
		return e.Time(k, v.Time())
	}
	switch x := v.Any().(type) {
	case error:
		return e.AnErr(k, x)
	case []string:
		return e.Strs(k, x)
	}
	return e.Interface(k, v.Any())
}
