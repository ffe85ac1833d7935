// Package fetch is the Ploti Data Feeds API client: typed calls with the
// API key, retries with backoff and Retry-After, a client-side rate limiter,
// and downloads of signed file links with size, sha256 and Parquet checks.
// It knows nothing of DuckDB; replica calls it and decides what to do.
//
// # Layers
//
//	Client.Manifest, Events, Version, ...   one method per endpoint (api.go)
//	Client.Places, Topics, Datasets, Preview, CreateSubscription,
//	UpdateSubscription, DeleteSubscription  finding datasets and changing
//	        subscriptions (discover.go, subscriptions.go)
//	  call/send marshal the body, retry, read a 2xx body up to MaxBodyBytes,
//	           decode it (ErrMalformed when it is not the JSON expected);
//	           extra headers (Idempotency-Key, If-Match) go on every try. A
//	           call that is not safe to repeat (creating a webhook) is not
//	           retried after the request may have reached the server: it
//	           returns ErrAmbiguous for the caller to find out what happened
//	  retry    tries again after transient failures: connection errors,
//	           timeouts, 5xx, 429; waits Retry-After (seconds or date), or
//	           PlanUnavailableWait for a 503 plan_unavailable without one,
//	           or a jittered exponential backoff; never on 400, 401, 403,
//	           404, 409, 410, 412; at most MaxAttempts tries (retry.go)
//	  newRequest / do   one HTTP exchange; a non-2xx answer becomes an
//	           *APIError whose Err is a sentinel, its body read through
//	           MaxErrorBodyBytes (client.go, errors.go)
//	  limitTransport    an http.RoundTripper with two token buckets: 120
//	           calls a minute, 20 for manifest and subscription
//	           create/change/preview; it waits, never fails (limiter.go)
//
// The watch API (watch.go; docs/wire.md section 9) has the same layers:
// Watch, Unwatch, Watches (every watch with its dataset's current version,
// in one call), DatasetInfo, Changes and Rows (one page each). SpoolRows
// and SpoolChanges (spool.go) read every page of a read into an NDJSON file
// in SpoolDir, one row a line, for the caller to load in bulk: a rows read
// stays on one version (an expired cursor, or reads of ids at different
// versions, start it over), and ids go MaxRowIDs a read.
//
// Download (download.go) streams a signed link into SpoolDir/name.part,
// verifies it and renames it to SpoolDir/name. It asks its caller for a
// fresh link when a link has expired and resumes a dropped transfer with a
// Range request. Stream (stream.go) is the optional fast path for a large
// Parquet file: its footer first with a Range request for its last bytes
// (ErrNoRanges when the link answers otherwise: Ploti's documentation does
// not say that signed links serve ranges), then its body in order, which a
// reader takes as it arrives.
//
// # Secrets
//
// The API key goes only to requests on the base URL's scheme, host and port
// (newRequest refuses any other URL, VersionByLink checks event links
// first) and never with a file link. Signed links carry their signature in
// the query string: errors and log lines show a link as scheme://host/path
// at most (APIError.Path is the path alone), and transport errors have
// their URL redacted the same way. Texts a server returns are scrubbed of
// the key and the query before they reach an error.
//
// # Errors
//
// Every answer error is an *APIError; check it with errors.Is against the
// sentinels in errors.go (ErrExpired, ErrNotSubscribed, ...). IsDatasetGone
// is true for the three 409 "no longer delivered" codes and an API 404;
// IsTransient tells whether a later try may succeed.
//
// # Spool
//
// Download leaves complete files in SpoolDir for the caller to load; the
// caller removes them with Remove(name) once loaded, or the whole directory
// with RemoveSpool. A failed download leaves nothing behind.
package fetch
