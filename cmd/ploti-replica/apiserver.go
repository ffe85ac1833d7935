package main

import (
	"fmt"
	"strings"
)

// checkAPIServer refuses, as a usage error, a command that would take a
// file to another API server than the one it records (its last
// successful sync's): the file's cursor and versions are that server's,
// and a PLOTI_API_URL left over from another shell (the emulator's, a
// staging server's) must not move it silently. --api-url given on the
// command line is the user saying so; the next successful sync records it.
func (c *connFlags) checkAPIServer(env *Env) error {
	if c.flags != nil && c.flags.Changed("api-url") {
		return nil
	}
	_, recorded := storedSubscription(c.DB)
	if recorded == "" || sameAPI(recorded, c.APIURL) {
		return nil
	}
	from, keep := "the default", "give --api-url "+recorded
	if env.Getenv("PLOTI_API_URL") != "" {
		from, keep = "PLOTI_API_URL", "unset PLOTI_API_URL"
	}
	return &usageError{fmt.Errorf("%s follows the API at %s (its last sync's), not %s (%s): its cursor and versions are that server's; "+
		"give --api-url %s on the command line to move the file to it, or %s to keep following %s",
		c.DB, recorded, c.APIURL, from, c.APIURL, keep, recorded)}
}

// sameAPI reports whether two API base URLs name one server.
func sameAPI(a, b string) bool {
	return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
}
