package replica

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/internal/storagetest"
)

// A verify that could compare no dataset, each one unverifiable because
// its snapshot could not be downloaded (the spool's disk is full), is no
// success: NothingVerified says why, in the disk-full words. With room
// again, the same verify compares them and has nothing to say.
func TestVerify_nothingVerifiedOnAFullSpool(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	path := freshReplica(t)
	r := mustOpen(t, em, sub, path)
	mustSync(t, r)
	must(t, r.Close())

	spool := storagetest.Tmpfs(t, "4m")
	filler := storagetest.FillDisk(t, spool)
	r = mustOpen(t, em, sub, path, func(o *Options) { o.SpoolDir = spool })
	rep, err := r.Verify(ctx, VerifyOptions{})
	must(t, err)
	why := rep.NothingVerified()
	if rep.Unverifiable != 2 || !strings.Contains(why, "disk is full") {
		t.Fatalf("verify on a full spool: %+v; NothingVerified %q, want the disk-full words", rep, why)
	}
	must(t, os.Remove(filler))
	rep, err = r.Verify(ctx, VerifyOptions{})
	must(t, err)
	if rep.Verified != 2 || rep.NothingVerified() != "" {
		t.Fatalf("verify with room: %+v, NothingVerified %q", rep, rep.NothingVerified())
	}
}
