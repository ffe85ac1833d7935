// Package embedcheck holds the test that builds and runs
// examples/service, a Go module of its own that uses the library through
// a replace of the repository, as a service embedding it would.
package embedcheck
