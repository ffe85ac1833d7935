package main

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/ploti-replica/ploti-replica/replica"
)

// progressView draws a sync's progress on a terminal: one bar for the
// bootstrap's datasets and one for each page of events, with the dataset
// being loaded or merged named beside it. It draws nothing elsewhere.
type progressView struct {
	p     *mpb.Progress
	bar   *mpb.Bar
	phase string
	// label is the bar's own: a finished bar keeps the last dataset it
	// named, not the next bar's.
	label *atomic.Value // string
}

// newProgress returns nil (draw nothing) unless w is a terminal.
func newProgress(w io.Writer) *progressView {
	if !isTerminal(w) {
		return nil
	}
	return drawProgress(w)
}

// drawProgress is a view that draws on w, terminal or not.
func drawProgress(w io.Writer) *progressView {
	v := &progressView{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithAutoRefresh()), label: &atomic.Value{}}
	v.label.Store("")
	return v
}

// update is replica.Options.Progress.
func (v *progressView) update(pr replica.Progress) {
	if v == nil {
		return
	}
	switch {
	case pr.Phase == replica.PhaseLoad:
		v.label.Store(fmt.Sprintf("%s %s v%d", pr.Phase, pr.DatasetID, pr.Version))
		return
	case pr.Phase == replica.PhaseWatch && pr.Total == 0:
		return // no watches: no bar
	}
	if pr.Phase != v.phase || v.bar == nil || pr.Done <= 1 && pr.Phase == replica.PhaseEvents {
		v.finishBar()
		v.phase = pr.Phase
		label := &atomic.Value{} // the last phase's dataset is not this bar's
		label.Store("")
		v.label = label
		name := map[string]string{replica.PhaseBootstrap: "datasets", replica.PhaseEvents: "events", replica.PhaseWatch: "watches"}[pr.Phase]
		v.bar = v.p.AddBar(int64(pr.Total),
			mpb.PrependDecorators(decor.Name(name, decor.WC{W: 9, C: decor.DindentRight}), decor.CountersNoUnit("%d/%d", decor.WC{W: 12})),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return label.Load().(string) }),
				decor.Elapsed(decor.ET_STYLE_GO, decor.WC{W: 6})),
		)
	}
	if pr.Phase == replica.PhaseWatch && pr.DatasetID != "" {
		// A watched dataset read whole can take minutes: the line names
		// it, and the elapsed time shows the sync is alive.
		v.label.Store("watch " + pr.DatasetID + " ")
	}
	v.bar.SetCurrent(int64(pr.Done))
}

func (v *progressView) finishBar() {
	if v.bar != nil {
		v.bar.SetTotal(-1, true)
		v.bar = nil
	}
}

// wait finishes the drawing before anything else is printed.
func (v *progressView) wait() {
	if v == nil {
		return
	}
	v.finishBar()
	v.p.Wait()
}
