package emulator

import (
	"context"
	"testing"
	"time"
)

func TestZZBench(t *testing.T) {
	em, err := New(Options{Dir: "/tmp/embench", NoRateLimit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	em.AddDataset(DatasetSpec{ID: "b", KeyColumns: []string{"k"}, Columns: []Column{{Name: "k", Type: "string"}, {Name: "v", Type: "integer"}, {Name: "s", Type: "string"}, {Name: "g", Type: "geometry"}}})
	for r := range 2 {
		start := time.Now()
		_, err := em.PublishQuery(context.Background(), "b", `SELECT 'K' || i AS k, i + CASE WHEN i % 10 = `+string(rune('0'+r))+` THEN 1 ELSE 0 END AS v, repeat('x', 50) AS s, 'POINT (' || (i/1000.0) || ' 1)' AS g FROM range(`+string(rune('0'+r))+`, 2000000) t(i)`, Parts(4))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %v", r, time.Since(start))
	}
}
