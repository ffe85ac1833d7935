package main

// Flag values that need reading: sizes and spans given as text.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ploti-replica/ploti-replica/replica"
)

// sizeRE is a size: a whole number and an optional unit.
var sizeRE = regexp.MustCompile(`^(?i)\s*(\d+)\s*(b|kb|mb|gb|kib|mib|gib)?\s*$`)

// attachmentsInlineMax reads --attachments-inline-max as
// replica.Options.AttachmentsInlineMax takes it: 0 on the command line
// (every attachment a file) is negative there; empty is its default.
func attachmentsInlineMax(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := parseSize("--attachments-inline-max", s)
	if n == 0 {
		return -1, err
	}
	return n, err
}

// parseSize reads a size given to flag: a whole number of bytes, or one
// with a unit (KB, MB, GB, KiB, MiB, GiB).
func parseSize(flag, s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, &usageError{fmt.Errorf("%s %q: want a size such as 1MiB, 500KB or 0", flag, s)}
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, &usageError{fmt.Errorf("%s %q: %w", flag, s, err)}
	}
	unit := map[string]int64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}[strings.ToLower(m[2])]
	return n * unit, nil
}

// parseHistoryKeep reads --history-keep: a number of versions, a number of
// days (30d), or a Go duration (720h).
func parseHistoryKeep(s string) (replica.HistoryKeep, error) {
	var k replica.HistoryKeep
	switch {
	case s == "":
		return k, nil
	case strings.HasSuffix(s, "d"):
		n, err := strconv.Atoi(strings.TrimSuffix(s, "d"))
		if err != nil || n <= 0 {
			return k, fmt.Errorf("--history-keep %q: want versions (10), days (30d) or a duration (720h)", s)
		}
		k.Age = time.Duration(n) * 24 * time.Hour
	default:
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			k.Versions = n
			return k, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return k, fmt.Errorf("--history-keep %q: want versions (10), days (30d) or a duration (720h)", s)
		}
		k.Age = d
	}
	return k, nil
}
