package embedcheck

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A program in a module of its own opens a replica with a log/slog
// logger, keeps it current with Run while the emulator publishes, gets Run
// back within a second of the cancel and ErrClosed from Sync after Close
// (examples/service checks each and exits 1 when one does not hold). The
// module must build from the module cache alone: GOPROXY=off.
func TestServiceExampleModule(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to build examples/service with")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "run", ".")
	cmd.Dir = filepath.Join("..", "..", "examples", "service")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.CombinedOutput()
	t.Logf("go run examples/service:\n%s", out)
	if err != nil {
		t.Fatalf("examples/service: %v", err)
	}
	for _, want := range []string{"synced (start): ds_fl_orange_permits 0 -> 1", "ds_fl_orange_permits 1 -> 2",
		"Run returned", "Sync after Close: replica is closed", "\nok\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("examples/service's output lacks %q", want)
		}
	}
}
