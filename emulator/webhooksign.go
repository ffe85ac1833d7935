package emulator

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// post sends m signed at signedAt (WebhookNow, not the emulator clock:
// see Options.Now), returning the answer's status (0 for none), the
// headers sent and the transport error.
func (w *webhookState) post(m *message, signedAt time.Time) (int, http.Header, error) {
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, m.hook.URL, bytes.NewReader(m.body))
	if err != nil {
		return 0, nil, err
	}
	ts := strconv.FormatInt(signedAt.Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", webhookUserAgent)
	req.Header.Set("webhook-id", m.id)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", signWebhook(m.hook.secret, m.id, ts, m.body))
	if h := m.hook.header; h != nil {
		req.Header.Set(h.Name, h.Value)
	}
	sent := req.Header.Clone()
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, sent, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, sent, nil
}

// signWebhook is Standard Webhooks' "v1,<base64>": HMAC-SHA256 of
// "<id>.<timestamp>.<body>" keyed with the base64 bytes after "whsec_".
func signWebhook(secret, id, ts string, body []byte) string {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// webhookSecret is a webhook's signing secret: 24 bytes derived from its id,
// so that runs are repeatable.
func webhookSecret(id string) string {
	sum := sha256.Sum256([]byte("ploti-emulator webhook secret " + id))
	return secretPrefix + base64.StdEncoding.EncodeToString(sum[:24])
}
