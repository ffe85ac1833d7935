// Package serve keeps a replica current as a long-running daemon: signed
// Ploti webhooks are the signal, the feed's log is the record, polling is
// the fallback. It is what `ploti-replica serve` runs, for a Go service
// that wants the same without the command.
//
//	d, err := serve.New(serve.Options{
//		DB:      "feeds.duckdb",
//		Replica: replica.Options{APIKey: key, SubscriptionID: "sub_1", Logger: log},
//		Webhook: serve.Webhook{Path: "/ploti", Secret: secret}, // whsec_…
//		Poll:    serve.DefaultPoll,
//	})
//	mux.Handle("/", d.Handler()) // the webhook paths, /healthz, /metrics
//	err = d.Run(ctx)             // until ctx is cancelled
//
// Run syncs at start, whenever a webhook delivers a new event, and Poll
// after the last sync; events that arrive during a sync cause exactly one
// more. A failed sync is retried after a wait that doubles from RetryMin
// to RetryMax. An error no retry can mend stops Run: the subscription is
// another's, the stored cursor is not its, or the subscription is gone
// (met twice in a row, since one 404 may be a proxy's). With VerifyEvery,
// the sync that comes when due also runs replica.Verify.
//
// The replica is open only while a sync runs (replica.Open, Sync, Close),
// so readers can open a file read-only in between. Cancelling Run's
// context lets the transaction under way commit, within ShutdownTimeout.
//
// A member webhook's dataset.changed starts a sync too; its request events
// (data_request.*, research_request.*) are kept on disk in an InboxQueue
// before the delivery is answered, and recorded in _ploti.inbox by the
// next sync, once each.
//
// Logs go to a *slog.Logger: the replica's own lines (its API client's
// and its executor's too) to Replica.Logger, the daemon's (each sync,
// webhook delivery, the request-event queue, verify) to Options.Logger,
// or Replica.Logger when that is nil; nil for both logs nothing.
//
// GET /healthz answers 200 while the last sync succeeded and no event
// waited after the cursor when it ended, else 503 with a JSON reason; GET
// /metrics serves the ploti_replica_* metrics (Prometheus).
package serve
