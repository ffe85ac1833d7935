package webhook

import (
	"fmt"
	"testing"
	"time"
)

func TestSeenSet_add(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	tests := []struct {
		name string
		id   string
		at   time.Duration
		want bool
	}{
		{name: "first a", id: "a", at: 0, want: true},
		{name: "repeat a", id: "a", at: time.Minute, want: false},
		{name: "first b", id: "b", at: 2 * time.Minute, want: true},
		{name: "a just inside the window", id: "a", at: 10*time.Minute - time.Nanosecond, want: false},
		{name: "a after the window", id: "a", at: 10 * time.Minute, want: true},
		{name: "b still inside", id: "b", at: 11 * time.Minute, want: false},
		{name: "a again, clock went back", id: "a", at: 5 * time.Minute, want: false},
	}
	s := newSeenSet(10*time.Minute, 100)
	for _, tc := range tests {
		if got := s.add(tc.id, t0.Add(tc.at)); got != tc.want {
			t.Fatalf("%s: add = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSeenSet_bounded checks that memory stays bounded by max and by the
// window, and that the oldest id is forgotten first.
func TestSeenSet_bounded(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	const max = 50
	s := newSeenSet(time.Hour, max)
	for i := range 10 * max {
		if !s.add(fmt.Sprint(i), t0.Add(time.Duration(i)*time.Millisecond)) {
			t.Fatalf("id %d not new", i)
		}
		if s.len() > max || len(s.order)-s.head > max || cap(s.order) > 4*max {
			t.Fatalf("after %d ids: %d held, queue %d/%d", i+1, s.len(), len(s.order)-s.head, cap(s.order))
		}
	}
	now := t0.Add(time.Second)
	if s.add(fmt.Sprint(10*max-1), now) {
		t.Fatal("newest id forgotten")
	}
	if !s.add("0", now) {
		t.Fatal("oldest id remembered past max")
	}
	s.expire(now.Add(2 * time.Hour))
	if got := s.len(); got != 0 {
		t.Fatalf("%d ids after the window, want 0", got)
	}
}
