package clients

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// example is one thing README.md gives a user to run on a replica file:
// a SQL statement, or a JavaScript program; where says where it is.
type example struct {
	where, code string
}

var (
	fence = regexp.MustCompile("(?ms)^```(\\w*)\\n(.*?)^```")
	// duckdbCLI is the SQL of a `duckdb -readonly FILE "SQL"` line;
	// pythonSQL that of a con.sql("SQL") call.
	duckdbCLI = regexp.MustCompile(`duckdb -readonly \S+ "([^"]+)"`)
	pythonSQL = regexp.MustCompile(`\.sql\("([^"]+)"\)`)
)

// readmeExamples reads README.md's examples that run on a DuckDB file:
// each statement of its sql blocks, the SQL of its duckdb CLI lines and
// of its Python con.sql calls, and its JavaScript blocks (PostgreSQL's
// psql lines are not for a file).
func readmeExamples(readme string) (sql, js []example) {
	for _, m := range fence.FindAllStringSubmatchIndex(readme, -1) {
		lang, body := readme[m[2]:m[3]], readme[m[4]:m[5]]
		line := strings.Count(readme[:m[0]], "\n") + 1
		where := fmt.Sprintf("README.md:%d (%s)", line, lang)
		switch lang {
		case "sql":
			for _, s := range statements(body) {
				sql = append(sql, example{where, s})
			}
		case "sh", "python":
			for _, re := range []*regexp.Regexp{duckdbCLI, pythonSQL} {
				for _, q := range re.FindAllStringSubmatch(body, -1) {
					sql = append(sql, example{where, q[1]})
				}
			}
		case "js", "javascript":
			js = append(js, example{where, body})
		}
	}
	return sql, js
}

// statements splits a SQL block into its statements, without the
// comments (-- to the end of a line, outside a string).
func statements(block string) []string {
	var clean strings.Builder
	for _, line := range strings.Split(block, "\n") {
		inString := false
		for i := 0; i < len(line); i++ {
			if line[i] == '\'' {
				inString = !inString
			}
			if !inString && strings.HasPrefix(line[i:], "--") {
				line = line[:i]
				break
			}
		}
		clean.WriteString(line + "\n")
	}
	var out []string
	for _, s := range strings.Split(clean.String(), ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// demoFile builds the command and writes the demo's file with it.
func demoFile(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ploti-replica")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ploti-replica").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "ploti-demo.duckdb")
	if out, err := exec.Command(bin, "demo", "--db", path).CombinedOutput(); err != nil {
		t.Fatalf("ploti-replica demo --db %s: %v\n%s", path, err, out)
	}
	return path
}

// Every example README.md gives for reading a file runs, as written, on
// the demo's file: its SQL with the engine's DuckDB and with each
// @duckdb/node-api client, and its Node program with the newest client.
func TestReadme_examplesRunOnTheDemoFile(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sql, js := readmeExamples(string(b))
	if len(sql) < 6 || len(js) < 1 {
		t.Fatalf("README.md gives %d SQL statement(s) and %d JavaScript block(s) for a file: the examples were not found", len(sql), len(js))
	}
	t.Logf("README.md gives %d SQL statement(s) and %d JavaScript program(s) for a file", len(sql), len(js))
	path := demoFile(t)
	db, err := backends.Open(context.Background(), path, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range sql {
		if err := runAll(db.SQL(), ex.code); err != nil {
			t.Errorf("%s: %s\n%s", ex.where, err, ex.code)
		}
	}
	db.Close()
	t.Run("node", func(t *testing.T) {
		node, clientsDir := setupNode(t)
		for _, c := range clients {
			for i, msg := range runWithClient(t, node, clientsDir, c, path, sql) {
				if msg != nil {
					t.Errorf("%s with %s: %s\n%s", sql[i].where, c, *msg, sql[i].code)
				}
			}
		}
		for _, ex := range js {
			out, err := runProgram(t, node, clientsDir, path, ex.code)
			if err != nil {
				t.Errorf("%s: %v\n%s\n%s", ex.where, err, out, ex.code)
			}
			t.Logf("%s printed:\n%s", ex.where, out)
		}
	})
}

// runAll runs a statement and reads every row of its answer.
func runAll(db *sql.DB, q string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

// runWithClient runs the statements with one client (testdata/sql.mjs):
// each one's error, nil when it ran.
func runWithClient(t *testing.T, node, clientsDir, client, path string, sql []example) []*string {
	t.Helper()
	stmts := make([]string, len(sql))
	for i, ex := range sql {
		stmts[i] = ex.code
	}
	in, _ := json.Marshal(stmts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sql.mjs", clientsDir, client, path)
	cmd.Dir = "testdata"
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s running the README's SQL: %v\n%s", client, err, stderr.String())
	}
	var msgs []*string
	if err := json.Unmarshal(out, &msgs); err != nil || len(msgs) != len(stmts) {
		t.Fatalf("%s: %v\n%s", client, err, out)
	}
	return msgs
}

// runProgram runs a README JavaScript program as written, in a folder
// where its file names are the demo's file and its import of
// @duckdb/node-api finds the newest client.
func runProgram(t *testing.T, node, clientsDir, path, code string) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"feeds.duckdb", "ploti-demo.duckdb"} {
		must(t, os.Symlink(path, filepath.Join(dir, name)))
	}
	must(t, os.MkdirAll(filepath.Join(dir, "node_modules", "@duckdb"), 0o755))
	must(t, os.Symlink(filepath.Join(clientsDir, "node_modules", clients[len(clients)-1]), filepath.Join(dir, "node_modules", "@duckdb", "node-api")))
	must(t, os.WriteFile(filepath.Join(dir, "example.mjs"), []byte(code), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "example.mjs")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil && len(bytes.TrimSpace(out)) == 0 {
		err = fmt.Errorf("it printed nothing")
	}
	return out, err
}
