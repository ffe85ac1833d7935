// Package emulator is a faithful, deterministic Ploti Data Feeds server for
// tests, for `ploti-replica demo` and for users' CI.
//
// It is shaped like net/http/httptest: New builds an Emulator from Options,
// Start listens on loopback (one listener for the API, a second one for the
// signed file links, so files live on "another host"), URL gives the API base
// URL and Close stops both listeners, waits for requests in flight and removes
// the scratch directory.
//
//	em, err := emulator.New(emulator.Options{})
//	if err != nil { ... }
//	if err := em.Start(); err != nil { ... }
//	defer em.Close()
//	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
//	em.AddDataset(emulator.DatasetSpec{ID: "ds_permits", PlaceID: "fl-orange", KeyColumns: []string{"permit"},
//		Columns: []emulator.Column{{Name: "permit", Type: "string"}}})
//	sub, _ := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
//	rel, _ := em.Publish(ctx, "ds_permits", []emulator.Row{{"permit": "P-1"}})
//	// a client now reads em.URL()+"/v1/feeds/subscriptions/"+sub+"/events" with em.APIKey()
//
// The wire format is the one of the project's docs/wire.md and Ploti's own
// documents; the emulator deliberately imports no other package of this
// module, so that a misreading in the client is caught here and the other way
// round.
//
// # Data
//
// Everything about rows stays in DuckDB SQL: Publish loads Go rows into a
// staging table and takes the same path as PublishQuery, which runs a caller's
// SELECT. A new version's rows are matched to the last released version's rows
// by the dataset's key columns (all shared columns for an unkeyed dataset); a
// matched record keeps its _ploti_record_id, the others get new ids
// ("rec_d<n>_<k>", k = a per-dataset counter plus the row's position, so ids
// are deterministic and never reused within a dataset). Snapshot, changes,
// schema and id map files are written under Options.Dir and served by the file
// listener through signed links that last one hour of emulator time.
//
// A version is held for review, as Ploti's docs say, on a breaking (MAJOR)
// schema change, a key with duplicates or nulls, fewer than 70% of the last
// released rows, or most records turning over while the row count barely
// moved; Hold gives the holds with no natural trigger. Changes, row counts
// and schema versions are always measured from the last released version.
//
// # Watches (docs/wire.md section 9)
//
// Every released version of a dataset, delivered by a subscription or not,
// is promoted to a Ploti version: Ploti's own number, 11, 14, 17, ...
// (PlotiVersionStart, PlotiVersionStep), unlike the Data Feeds numbers of
// the same versions and never consecutive, so a client must follow
// previousVersion. A held version is promoted when staff release it, a
// discarded one never. Release.PlotiVersion and PlotiVersions give the
// numbers; Watch, Unwatch and Watches drive the member's watches from Go.
//
// The routes: POST and DELETE /v1/datasets/{id}/watch, GET
// /v1/datasets/watches, GET /v1/datasets/{id}, GET
// /v1/datasets/{id}/changes?version=N and GET /v1/datasets/{id}/rows. They
// answer for any dataset the workspace's coverage (409 outside_coverage)
// and plan (409 not_deliverable, SetPlanClosed) open; Data Feeds
// deliverability (SetDeliverable) does not matter.
//
// A version's changes are measured by record id from the Ploti version it
// follows, over the columns both have. Its changeLog is first for a
// dataset's first Ploti version, ids_changed for WithReplacedIDs and
// ReplaceIDs, recorded otherwise; WithChangeLog sets any (an unknown text
// is served as it is). Only recorded lists entries: added, changed,
// removed, and renamed for WithRenames (recordId the new id,
// previousRecordId the old; Data Feeds gets the same version as a
// record_ids_changed resync). counts are always given; renamed records
// count only under renamed, and a first version counts its rows as added.
// Entries come in the order of the version's rows, removed ones last; a
// removed entry has no row key, the others carry row, the whole row, only
// while N is the dataset's latest version (null once a newer one is
// promoted, also in the middle of paging). WithPreviousPlotiVersion
// measures a version from an older Ploti version, which leaves a gap in the
// previousVersion chain for clients that hold one in between. A version
// promoted more than 90 days ago (Retention) answers 410 expired.
//
// rows pins a read to the version of its first page: later pages (the
// cursor carries the version) serve that version's rows until it has been
// superseded for RowsCursorLife (an hour), then 410 expired. A whole read
// serves the version's rows in the order of its snapshot; an ids read (at
// most MaxRowIDs ids) serves the rows of those ids that exist, in the order
// given, once each, paging over the ids (limit ids a page, so a page may
// hold fewer rows than limit while more follow). columns are the pinned
// version's. Before the first version: "version": null, no rows.
//
// Row values follow docs/wire.md: an integer beyond ±2^53 and a decimal are
// strings; a number that is NaN or infinite is the string "NaN",
// "Infinity" or "-Infinity"; a date "2026-11-20"; a timestamp RFC 3339 in
// UTC, with the fraction of a second when there is one; geometry GeoJSON
// (Z kept, M dropped, an empty point {"coordinates": []}); a null is null.
// DuckDB renders the rows in bulk: the version's rows are written as JSON
// lines in one COPY (kept for the two versions of a dataset read last,
// written again identically when needed), and each page is a run of its
// lines; only geometry is finished in Go, from its WKB. A release of a
// watched dataset writes its file before Publish or ReleaseHeld returns,
// so a client's first page does not wait for it; otherwise the first whole
// read does.
// rows calls count toward the rate limits like every call (a 1M-row read
// is 1,000 calls at limit 1000): a test that reads large datasets whole
// turns them off.
//
// # Member webhooks and request events
//
// CreateWebhook (or POST /v1/webhooks) without a SubscriptionID makes a
// member webhook: it receives dataset.changed for each promotion of a
// dataset the member watches while the coverage and plan open it, {"id",
// "type", "timestamp", "data": {"datasetId", "version", "promotedAt",
// "counts": {"added", "changed", "removed"}, "provenanceUrl"}}, and the
// request events EmitRequestEvent sends (RequestEventTypes; data with
// requestId and url, questions for research_request.question, answer for
// research_request.answered). Events filters among those types; a
// subscription's webhook still receives only its feed events. Member
// events have ids "evt_m…", are signed, retried, dropped and reported
// (Deliveries) as feed deliveries are, and MemberEvents lists them, as
// there is no log of them on the wire. MaxWebhooks counts both kinds: the
// 21st is ErrWebhookLimit (409 webhook_limit); the subscriptionId of a
// member webhook is null.
//
// # The watch side's truth
//
// WatchRows is what a whole rows read gives now. WatchTruth(id, syncedAt)
// is what a watch client holds that read the dataset whole at Ploti
// version syncedAt[0] and synced at each later listed one, following
// docs/wire.md's readings: a merge of the recorded versions between
// (touched rows as of the version synced to, a column added since null
// where nothing touched it), or a whole reload on a gap, a 410, a changeLog
// other than recorded or a column removed or retyped. WatchPlan says which
// each step was and why; DiffWatch compares a table with WatchTruth as Diff
// does with Truth. Expiry (410) is judged by the emulator clock when they
// are called.
//
// # Staff and the world
//
// Methods stand in for what Ploti's staff and the rest of the world do:
// ReleaseHeld, DiscardHeld, ReplaceIDs (record_ids_changed with an id map),
// ReRelease (previous_unavailable), Refile, SetCoverage, SetPlanClosed,
// SetDeliverable, SetPlanUnavailable (503 plan_unavailable), SetRebuilding
// (manifest "rebuilding"), SetDatasetStatus, SetSubscriptionBusy, Check (a
// source check that finds nothing) and PatchSubscription.
//
// # Keys and members
//
// The default key (Options.APIKey) is DefaultMember's, with every
// permission. AddKey adds a key for a member with some of the permissions
// the API checks (keys.go): a subscription's webhook takes webhooks and
// feeds, a member webhook webhooks, listing, deleting or testing a
// subscription's webhook feeds, and creating, changing or deleting a
// subscription admin; a key without one gets 403 forbidden. Webhooks and
// watches belong to the member whose key made them (WatchAs, WatchesOf,
// Webhook.Member). RemoveMember is a member leaving the workspace: their
// webhooks stop, their watches end and their keys answer 401.
//
// # Faults
//
// Inject and FailNext make matching requests fail: a status burst (429, 500,
// 503, with or without Retry-After), a connection reset, a truncated, cut-off
// or corrupt body, a slow answer. SetLinkLifetime makes links expire early;
// KeyLeaks counts file requests that carried the API key. SpoilWatch
// rewrites a dataset's changes and rows answers (an id listed twice, a
// value that does not fit its column) for a client's bad-input tests.
//
// SetWire puts the answers behind an imitated network (wire.go): a latency
// before every answer and a bandwidth cap that file bodies in flight share,
// such as OfficeWire (50 MB/s, 40 ms). It is off unless set.
//
// Truth gives, for any released version, the rows a subscriber that followed
// the feed from the start must hold: a snapshot for a version delivered by
// resync, the previous truth with the changes applied for one delivered as
// updated (so a column added by a MINOR change stays null for unchanged rows).
//
// # Time
//
// The emulator has its own clock. By default it is a manual clock starting at
// DefaultStart that only moves with Advance; link expiry, rate limits, event
// retention, file retention, stale checks, the events' timestamps, webhook
// retries and Delivery.At all read it. Options.Now replaces the base it
// starts from; Advance adds to either.
//
// One value is not on that clock: a webhook delivery's webhook-timestamp
// header (and the signature over it), which a receiver checks against its
// own wall clock, five minutes either way. It is signed with WebhookNow:
// under the manual clock the real time plus what Advance has added, so an
// emulator made with the zero Options delivers to a real receiver and
// Advance still moves the header ahead of it; with Options.Now set, the
// emulator clock itself. A test receiver that wants Advance to age a
// delivery it holds verifies against WebhookNow.
//
// # Logging
//
// Options.Logger (log/slog) hears each webhook delivery attempt (debug, or
// warn when the receiver did not take it, with the status or error), each
// injected fault that hits (debug) and each publish (info). No line holds
// the API key, a webhook's secret or custom header, or a link's signature.
//
// # Caller's duties
//
// Call Close. Publish, PublishQuery and the staff methods may be called while
// the server runs; they are serialized with each other. Rate limits are on by
// default (as at Ploti) and count on the emulator clock (under the manual
// clock, real time slides the window too, so waiting Retry-After works): a
// test that makes many calls quickly should pass Options.NoRateLimit or call
// SetRateLimit(false).
package emulator
