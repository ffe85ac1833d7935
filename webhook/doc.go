// Package webhook receives Ploti's signed webhook deliveries and turns them
// into a signal for the sync loop.
//
// Ploti signs each delivery with Standard Webhooks (docs/wire.md section 6):
// the headers webhook-id, webhook-timestamp (Unix seconds) and
// webhook-signature (space-separated "v1,<base64>" items while a secret
// rotates) carry an HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>",
// keyed with the base64-decoded bytes after "whsec_" in the secret.
//
// The package has three parts:
//
//   - [Verifier] checks a delivery's headers and raw body: one matching v1
//     signature is enough, the timestamp must be within 5 minutes of the
//     injected clock either way, and comparison is constant time. [Sign]
//     produces a signature, for tests and for the emulator's sender.
//   - [Handler] is an http.Handler. For a POST it reads the body through a
//     limit (413 above it), verifies it (400 or 401 with a short JSON reason,
//     never 5xx), decodes the event (400 if malformed), drops a repeated event
//     id it saw within its window (2xx, no second signal), and answers 2xx at
//     once. A feed event (type "feed.…") goes to OnEvent and signals the
//     [Trigger]; a ping or any other event goes to OnOther and signals
//     nothing. A non-feed event may first go to Keep, which records it
//     durably: if that fails, the answer is 503 and Ploti delivers it again.
//     Counters by [Result] feed the serve command's metrics.
//   - [Trigger] coalesces signals: any number of them while a sync runs cause
//     exactly one more sync, and Signal never blocks.
//
// A webhook is the signal to read the event log, not the record: the sync
// loop reads the log and skips event ids it already applied, so a delivery
// the Handler forgets (after its window, or when its memory is full) costs at
// most one extra, empty sync.
//
// Wiring, in outline:
//
//	v, err := webhook.NewVerifier(secret)
//	trig := webhook.NewTrigger()
//	h, err := webhook.NewHandler(webhook.HandlerOptions{Verifier: v, Trigger: trig})
//	mux.Handle("/webhook", h) // the Handler answers 405 itself
//	for {
//		select {
//		case <-ctx.Done():
//			return
//		case <-trig.C():
//			r.Sync(ctx)
//		}
//	}
//
// The secret never appears in an error string, a log line or a formatted
// Verifier.
package webhook
