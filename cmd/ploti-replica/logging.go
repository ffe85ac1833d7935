package main

// The CLI's logger, as --log-level and --log-format say.

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// logger builds the CLI's logger, which the library's packages take as a
// *slog.Logger and zerolog writes: human on a terminal, JSON otherwise.
func (c *connFlags) logger(w io.Writer) (*slog.Logger, error) {
	zl, err := c.zerolog(w)
	if err != nil {
		return nil, err
	}
	return slog.New(newZerologHandler(zl)), nil
}

// zerolog is the logger that writes the lines, as --log-level and
// --log-format say.
func (c *connFlags) zerolog(w io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(c.LogLevel)
	if err != nil || c.LogLevel == "" {
		return zerolog.Nop(), &usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", c.LogLevel)}
	}
	format := c.LogFormat
	if format == "auto" {
		format = "json"
		if isTerminal(w) {
			format = "human"
		}
	}
	switch format {
	case "json":
		return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
	case "human":
		return zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05", NoColor: !isTerminal(w)}).Level(level).With().Timestamp().Logger(), nil
	}
	return zerolog.Nop(), &usageError{fmt.Errorf("--log-format %q: want auto, human or json", c.LogFormat)}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
