package replica

import "github.com/ploti-replica/ploti-replica/storage/backends"

// IsDatabase tells whether where (Open's path) names a database, a
// postgres:// URL, rather than a file: what only a file has (a folder
// beside it, a path to stat) does not apply to it.
func IsDatabase(where string) bool { return backends.IsDatabase(where) }

// Name is where (Open's path) as logs and errors may show it: a database's
// URL without its password, a file's path as it is.
func Name(where string) string { return backends.Name(where) }
