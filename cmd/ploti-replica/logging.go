package main

// The CLI's logger, as --log-level and --log-format say.

import (
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// logger builds the CLI's logger: human on a terminal, JSON otherwise.
func (c *connFlags) logger(w io.Writer) (zerolog.Logger, error) {
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
