package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"time"
)

// demo times `ploti-replica demo` in a child process (the binary already
// built) from its start to the line that reports the first query answered.
func (r *run) demo(ctx context.Context) error {
	if !r.want("demo") {
		return nil
	}
	if r.cfg.Exe == "" {
		r.rep.note("demo: not measured (no binary to run)")
		return nil
	}
	var first Stat
	for i := range r.cfg.Repeat {
		d, err := r.demoOnce(ctx)
		if err != nil {
			return err
		}
		first.Add(d)
		r.logf("demo, run %d: first query answered after %s", i+1, secs(d))
	}
	r.rep.add(Line{What: "6. demo: start to the first query answered (warm build)", Size: "3 datasets",
		Engine: first.String(), Ratio: math.NaN()})
	return nil
}

func (r *run) demoOnce(ctx context.Context) (time.Duration, error) {
	p := r.path("demo")
	defer removeDB(p)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.cfg.Exe, "demo", "--db", p)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var took time.Duration
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if took == 0 && strings.Contains(sc.Text(), "first query answered") {
			took = time.Since(start)
		}
	}
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("demo: %w", err)
	}
	if took == 0 {
		return 0, fmt.Errorf("demo printed no \"first query answered\" line: %w", errMismatch)
	}
	return took, nil
}
