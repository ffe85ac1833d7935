package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// machine describes where the run ran: CPU, cores, memory, Go and DuckDB.
func machine() string {
	cpu := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	mem := ""
	if kb := memTotalKB(); kb > 0 {
		mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
	}
	duck := "DuckDB ?"
	if db, err := duckread.OpenPlain(context.Background(), "", storage.Options{}); err == nil {
		var v string
		if db.QueryRow("SELECT version()").Scan(&v) == nil {
			duck = "DuckDB " + v
		}
		db.Close()
	}
	return fmt.Sprintf("%s, %d cores%s, %s/%s, %s, %s", cpu, runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH, runtime.Version(), duck)
}

// memTotalKB is the machine's memory in KiB, 0 where /proc/meminfo does
// not say.
func memTotalKB() int64 {
	var kb int64
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		fmt.Sscanf(string(b), "MemTotal: %d kB", &kb)
	}
	return kb
}
