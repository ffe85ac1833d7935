package postgres

import "testing"

func TestPlaceholders(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"UPDATE t SET a = ?, b = ? WHERE c = ?", "UPDATE t SET a = $1, b = $2 WHERE c = $3"},
		{"SELECT '?', \"a?\", ? -- what?\n, ?", "SELECT '?', \"a?\", $1 -- what?\n, $2"},
		{"SELECT 'it''s ?', ?::VARCHAR", "SELECT 'it''s ?', $1::VARCHAR"},
	} {
		if got := placeholders(tc.in); got != tc.want {
			t.Errorf("placeholders(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
