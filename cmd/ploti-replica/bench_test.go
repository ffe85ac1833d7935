package main

import (
	"fmt"
	"testing"
)

func TestParseRows(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"1000000,10000000", "[1000000 10000000]"},
		{"1M, 10m", "[1000000 10000000]"},
		{"100k", "[100000]"},
		{"1_000_000", "[1000000]"},
		{"0", "error"},
		{"ten", "error"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseRows(tc.in)
			s := fmt.Sprint(got)
			if err != nil {
				s = "error"
			}
			if s != tc.want {
				t.Fatalf("parseRows(%q) = %s, want %s", tc.in, s, tc.want)
			}
		})
	}
}
