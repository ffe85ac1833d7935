package apply

import (
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// feed-events.txt, "Reading the log": "Two rules make the log safe to
// replay: Skip an updated, resync_required or schema_changed for a version
// at or below the one you hold, including after you reload a dataset part
// way through the log." The rule does not name added. The replica reads it
// as covering added too, from two other sentences: "Only loading a
// snapshot or applying a changes file changes the version you hold" (so
// loading a version at or below the held one either changes nothing or
// goes backwards) and "Versions reach subscribers in order for each
// dataset" (so an added at or below the held version is one already
// applied, or one a reload part way through the log has passed). A dataset
// removed since, or never held, loads as the docs say.
func TestDecide_TwoRulesMakeTheLogSafeToReplay_addedAtOrBelowHeldIsSkipped(t *testing.T) {
	removed5 := State{Known: true, Version: 5, Status: storage.StatusRemoved}
	tests := []struct {
		name  string
		state State
		ver   int
		want  Kind
	}{
		{"replayed: the version held", held5, 5, Skip},
		{"passed by a reload part way through the log", held5, 3, Skip},
		{"a newer version: 'When version is set, load that version's snapshot'", held5, 6, Load},
		{"never held: load", State{}, 2, Load},
		{"removed since: load, even at the version held when it left", removed5, 5, Load},
		{"removed since: load an older one too", removed5, 4, Load},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Decide(tt.state, ev(ploti.EventAdded, v(tt.ver), nil), "")
			if a.Kind != tt.want {
				t.Fatalf("added v%d with %+v: %v (%s), want %v", tt.ver, tt.state, a.Kind, a.Why, tt.want)
			}
		})
	}
}
