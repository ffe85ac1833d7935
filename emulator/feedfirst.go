package emulator

// subscriptions-manifest-files.txt: "A dataset's files are built only once
// a subscription includes it, so a dataset you have just subscribed to can
// be null until its first version is built and sent", with status
// "not_built until a subscription includes the dataset". A version
// published before then moves the watch side (which is separate from Data
// Feeds) and the emulator's build chain, but Data Feeds shows nothing of
// it: current is null, the versions API does not know it. When a
// subscription first includes the dataset it gets feed.dataset.added with
// version null, and the newest version goes out at once, built, as
// feed.dataset.resync_required with reason first_version (feed-events.txt:
// "When it is null, the dataset has no released version yet, and its first
// version arrives as feed.dataset.resync_required with reason
// first_version").

const reasonFirstVersion = "first_version"

// current is the dataset's current version as Data Feeds shows it: the
// last released one, once a subscription has included the dataset.
func (d *dataset) current() *version {
	if d.feedFirst == nil {
		return nil
	}
	return d.released
}

// sentByFeeds reports whether Data Feeds sent version v: released, and
// not older than the first version a subscription got.
func (d *dataset) sentByFeeds(v *version) bool {
	return v.state == "released" && d.feedFirst != nil && v.num >= d.feedFirst.num
}

// buildForFeedsLocked is a subscription including the dataset: when no
// subscription had, and a version was published, that version becomes the
// first Data Feeds sends, built and released now (its files' retention
// counts from now). It reports whether it did.
func (e *Emulator) buildForFeedsLocked(d *dataset) bool {
	if d.feedFirst != nil || d.released == nil {
		return false
	}
	d.feedFirst = d.released
	d.released.publishedAt, d.released.builtAt = e.nowLocked(), e.nowLocked()
	return true
}

// sendFirstVersion sends the dataset's first version, just built for
// Data Feeds, to a subscription that got its added with version null.
func (e *Emulator) sendFirstVersion(s *subscription, d *dataset) {
	v := d.feedFirst
	e.appendEvent(s, "feed.dataset.resync_required", d, map[string]any{
		"version": vp(v.num), "previousVersion": nil, "schemaVersion": v.schema.Version, "reason": reasonFirstVersion,
	})
}
