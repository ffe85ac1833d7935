package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// cliAdviceRE finds advice only the command line can give in an error's
// words: a ploti-replica command to run, or a --flag. ("not a
// ploti-replica file" names the program, not a command.)
var cliAdviceRE = regexp.MustCompile("`ploti-replica|ploti-replica (sync|serve|watch|subscriptions|holds|verify|history|changes|diff|status|datasets|webhooks|inbox|places|topics|demo|bench|emulator)\\b|(^|[\\s(`\"'])--[a-z]")

// libraryDirs are the packages whose errors a Go caller reads.
var libraryDirs = []string{"../replica", "../apply", "../fetch", "../storage", "../storage/duckdb", "../storage/postgres",
	"../storage/duckread", "../storage/backends", "../serve", "../webhook"}

// The library's errors say what happened and what the Go API offers; the
// CLI adds its commands and flags (cmd/ploti-replica/hints.go). Every
// error text written in the library's source (errors.New, fmt.Errorf, an
// Error method's words) is held to it.
func TestErrors_noCLIAdviceInTheSource(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range libraryDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		must(t, err)
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			must(t, err)
			for _, lit := range errorTexts(f) {
				if s, _ := strconv.Unquote(lit.Value); cliAdviceRE.MatchString(s) {
					t.Errorf("%s: an error tells the reader what to run: %s", fset.Position(lit.Pos()), lit.Value)
				}
			}
		}
	}
}

// errorTexts are the string literals of f that make an error's words: the
// format or text of errors.New and fmt.Errorf, and whatever an Error
// method formats.
func errorTexts(f *ast.File) []*ast.BasicLit {
	var out []*ast.BasicLit
	collect := func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				out = append(out, lit)
			}
			return true
		})
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.Name == "Error" {
			collect(fd.Body)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "errors" && sel.Sel.Name == "New" || x.Name == "fmt" && sel.Sel.Name == "Errorf") {
				collect(call.Args[0])
			}
		}
		return true
	})
	return out
}

// The errors that once carried the CLI's advice, made the way a caller
// meets them, carry none now, and still match their sentinels.
func TestErrors_noCLIAdvice(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	check := func(name string, err, is error) {
		t.Helper()
		if !errors.Is(err, is) {
			t.Fatalf("%s = %v, want %v", name, err, is)
		}
		if cliAdviceRE.MatchString(err.Error()) {
			t.Errorf("%s: %q tells the reader what to run", name, err)
		}
	}
	_, err := Open(ctx, freshReplica(t), Options{APIURL: em.URL(), APIKey: em.APIKey()})
	check("open with no subscription and no watches", err, ErrNothingToKeep)
	_, err = Open(ctx, "postgres://nobody@127.0.0.1:1/none", Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, History: []string{HistoryAll}})
	check("open a database with history", err, ErrFileOnly)
	_, err = Open(ctx, newerStorageFile(t), Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub})
	check("open a file of a newer DuckDB", err, ErrStorageVersion)

	r := mustOpen(t, em, sub, "", fastRetries)
	mustSync(t, r)
	if _, ok := r.db.Engine().(storage.HistoryReader); ok { // a DuckDB file's
		_, err = r.Story(ctx, "ds_permits", "rec_x")
		check("a story of a dataset without history", err, ErrNoHistory)
	}
	em.FailNext("GET /v1/feeds/subscriptions/*/events", http.StatusBadRequest, 1)
	_, err = r.Sync(ctx)
	check("sync after a cursor the API refuses", err, ErrForeignCursor)
	em.FailNext("GET /v1/feeds/subscriptions/*/events", http.StatusNotFound, 1)
	_, err = r.Sync(ctx)
	check("sync of a deleted subscription", err, ErrSubscriptionGone)
}

// newerStorageFile writes a file whose DuckDB header names a storage
// version past any this build reads.
func newerStorageFile(tb testing.TB) string {
	tb.Helper()
	head := make([]byte, 4096)
	copy(head[8:12], "DUCK")
	binary.LittleEndian.PutUint64(head[12:20], 1<<20)
	path := filepath.Join(tb.TempDir(), "newer.duckdb")
	must(tb, os.WriteFile(path, head, 0o600))
	return path
}
