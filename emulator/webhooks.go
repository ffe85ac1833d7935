package emulator

// The delivery side of webhooks (docs/wire.md sections 6 and 9;
// feed-events.txt, "Webhooks for a subscription"; watch-and-webhooks.txt):
// a subscription's webhook receives its feed events, each POSTed as the
// event object the log serves; a member webhook (no subscription) receives
// dataset.changed and the request events (member.go). Both are signed with
// Standard Webhooks. The API routes are in apiMux; the hooks that queue a
// delivery for each new event are in appendEvent and emitMemberLocked.
//
// Here are the webhooks' types and state; their Go API is in
// webhookmanage.go, its routes in webhookapi.go, the delivery queue and its
// sender in webhookqueue.go, the signed POST in webhooksign.go, and what a
// test sees and steers of the deliveries in webhookdeliveries.go.

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// Limits and settings of webhook delivery.
const (
	// MaxWebhooks is how many webhooks the workspace's member may have,
	// subscription and member webhooks together (docs: "A member may have
	// 20 webhooks").
	MaxWebhooks = 20
	// DeliveryTimeout is how long (real time) one POST may take before it
	// counts as failed.
	DeliveryTimeout = 15 * time.Second
	// webhookUserAgent is sent with every POST.
	webhookUserAgent = "Ploti-Webhooks/emulator"
	// secretPrefix starts a signing secret.
	secretPrefix = "whsec_"
	// reasonSubscriptionDeleted is the disabledReason of a webhook whose
	// subscription was deleted.
	reasonSubscriptionDeleted = "the subscription was deleted"
)

// DeliveryRetryIntervals returns the waits before each of the six retries
// of a failed delivery, measured on the emulator clock from the attempt
// before (docs: "retried six times, at growing intervals, over about a day
// and a half"): 5s, 5m, 30m, 2h, 10h and 24h, 36h35m5s in all.
func DeliveryRetryIntervals() []time.Duration {
	return []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 10 * time.Hour, 24 * time.Hour}
}

// feedEventTypes are the event types a subscription's webhook may ask for.
var feedEventTypes = []string{
	"feed.dataset.added", "feed.dataset.updated", "feed.dataset.resync_required", "feed.dataset.schema_changed",
	"feed.dataset.removed", "feed.dataset.stale", "feed.dataset.delayed",
}

// reservedHeaders may not be a webhook's custom header: the emulator sets them.
var reservedHeaders = []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature", "Content-Type", "Content-Length",
	"Host", "User-Agent", "Transfer-Encoding", "Connection"}

// WebhookSpec describes a webhook for CreateWebhook and POST /v1/webhooks.
type WebhookSpec struct {
	// URL receives the POSTs: an https address (watch-and-webhooks.txt: "A
	// webhook is an https address you control"), or plain http to a
	// loopback host (localhost, 127.0.0.0/8, ::1), for receivers in tests.
	URL string `json:"url"`
	// Description is free text.
	Description string `json:"description"`
	// SubscriptionID is the subscription whose feed events the webhook
	// receives. Empty makes a member webhook, which receives
	// dataset.changed for every dataset the member watches and the request
	// events.
	SubscriptionID string `json:"subscriptionId"`
	// Events lists the event types to send, among the ones the webhook's
	// kind receives; empty means all of them.
	Events []string `json:"events"`
	// Header, if set, is sent with every POST, such as a bearer key the
	// receiver requires. Its value is never shown again.
	Header *WebhookHeader `json:"header"`
	// Member is the member whose key creates it, who owns it (keys.go);
	// empty means DefaultMember. POST /v1/webhooks sets it from the key.
	Member string `json:"-"`
}

// WebhookHeader is a custom header sent with every POST.
type WebhookHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Webhook is a webhook as CreateWebhook and Webhooks show it.
type Webhook struct {
	ID             string
	URL            string
	Description    string
	SubscriptionID string
	// Events is the type filter; nil means every type the webhook's kind
	// receives.
	Events []string
	// HeaderName names the custom header, if any; its value is not shown.
	HeaderName string
	// Member is the member it belongs to.
	Member string
	// Disabled is set when the receiver answered 410 or the subscription
	// was deleted; DisabledReason says which. Nothing more is sent to it.
	Disabled       bool
	DisabledReason string
	CreatedAt      time.Time
	// Secret is the signing secret, "whsec_" and base64. Only
	// CreateWebhook's answer carries it.
	Secret string
}

// Delivery is one attempt to deliver a message (a feed event or a ping) to a
// webhook, as Deliveries reports it.
type Delivery struct {
	WebhookID string
	// MessageID is the webhook-id header: the same on each retry of a
	// message, and not the event id.
	MessageID string
	EventID   string
	EventType string
	// Attempt is 1 for the first try and up to 7 for the sixth retry.
	Attempt int
	// At is the emulator time of the attempt. The webhook-timestamp sent
	// (in Header) is WebhookNow's: the same under Options.Now, the real
	// time plus Advance's offset under the manual clock.
	At time.Time
	// Status is the receiver's answer; 0 when there was none.
	Status int
	// Err says why there was no answer, or why the message was not sent.
	Err string
	// Dropped is set for an attempt DropDeliveries ate: never sent, never
	// retried, as if it were lost on the way.
	Dropped bool
	// NextAttempt is when the message will be tried again; zero: never.
	NextAttempt time.Time
	// Body is the signed body; Header the request's headers, signature and
	// custom header included.
	Body   []byte
	Header http.Header
}

// OK reports whether the receiver took the message (a 2xx answer).
func (d Delivery) OK() bool { return d.Status >= 200 && d.Status < 300 }

// webhookState is the emulator's webhooks and their delivery queue. Lock
// order: Emulator.mu before webhookState.mu; the sender never holds mu while
// it takes Emulator.mu or sends.
type webhookState struct {
	mu       sync.Mutex
	hooks    map[string]*hook
	order    []string
	nextHook int
	nextMsg  int
	nextPing int
	queue    []*message
	log      []Delivery
	drop     int  // attempts left to drop; negative: all
	busy     bool // an attempt is in flight
	changed  chan struct{}

	kick   chan struct{} // wakes the sender; never closed
	cancel context.CancelFunc
	ctx    context.Context
	done   chan struct{}
	client *http.Client
}

// hook is one webhook with its secrets.
type hook struct {
	Webhook
	secret string
	header *WebhookHeader
}

// message is one event or ping waiting to be sent to one webhook.
type message struct {
	hook     *hook
	id       string
	eventID  string
	typ      string
	dataset  string // data.datasetId; empty for a ping
	seq      int64  // queue order, to keep a dataset's events in order
	body     []byte
	attempts int
	due      time.Time
	ping     bool // pings are sent once, never retried
}

// webhooksLocked returns the webhook state, starting the sender on first
// use. It fails once the emulator is closed.
func (e *Emulator) webhooksLocked() (*webhookState, error) {
	if e.closed {
		return nil, ErrClosed
	}
	if e.webhooks != nil {
		return e.webhooks, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr := http.DefaultTransport.(*http.Transport).Clone()
	w := &webhookState{
		hooks: map[string]*hook{}, changed: make(chan struct{}), kick: make(chan struct{}, 1),
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
		client: &http.Client{Transport: tr, Timeout: DeliveryTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	e.webhooks = w
	go e.sendLoop(w)
	return w, nil
}
