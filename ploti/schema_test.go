package ploti

import "testing"

// TestSchemaChange_IsMajor_KeyChangedFromOneSetToAnotherOrDropped follows
// schemas-and-holds.txt when a change carries no bump: "a column removed
// or retyped, or the key changed from one set of columns to another or
// dropped (a MAJOR bump)". A key added where there was none is not MAJOR.
func TestSchemaChange_IsMajor_KeyChangedFromOneSetToAnotherOrDropped(t *testing.T) {
	major := BumpMajor
	tests := []struct {
		name string
		c    *SchemaChange
		want bool
	}{
		{"nil", nil, false},
		{"column added", &SchemaChange{Added: []Column{{Name: "x"}}}, false},
		{"column removed", &SchemaChange{Removed: []Column{{Name: "x"}}}, true},
		{"column retyped", &SchemaChange{Retyped: []Retyped{{Name: "x"}}}, true},
		{"key added where none", &SchemaChange{KeyColumns: &KeyChange{From: []string{}, To: []string{"id"}}}, false},
		{"key added, from null", &SchemaChange{KeyColumns: &KeyChange{To: []string{"id"}}}, false},
		{"key changed", &SchemaChange{KeyColumns: &KeyChange{From: []string{"id"}, To: []string{"id", "day"}}}, true},
		{"key dropped", &SchemaChange{KeyColumns: &KeyChange{From: []string{"id"}, To: []string{}}}, true},
		{"bump says major", &SchemaChange{Bump: &major, Added: []Column{{Name: "x"}}}, true},
	}
	for _, tt := range tests {
		if got := tt.c.IsMajor(); got != tt.want {
			t.Errorf("%s: IsMajor() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
