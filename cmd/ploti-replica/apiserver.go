package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/replica"
)

// checkAPIServer refuses, as a usage error, a command that would take a
// file to another API server than the one it records (its last
// successful sync's): the file's cursor and versions are that server's,
// and a PLOTI_API_URL left over from another shell (the emulator's, a
// staging server's) must not move it silently. --api-url given on the
// command line is the user saying so; the next successful sync records it.
// A file that never synced holds nothing of any server, and a file that
// cannot be read now (another process writes it) is not checked.
func (c *connFlags) checkAPIServer(env *Env) error {
	if c.flags != nil && c.flags.Changed("api-url") {
		return nil
	}
	if exists, err := replica.FileExists(c.DB); !replica.IsDatabase(c.DB) && (err != nil || !exists) {
		return nil
	}
	st := fileStatus(context.Background(), c.DB)
	if st == nil || st.LastSyncAt == nil || st.APIURL == "" || sameAPI(st.APIURL, c.APIURL) {
		return nil
	}
	recorded := st.APIURL
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
