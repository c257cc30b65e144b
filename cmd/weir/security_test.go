//go:build unix

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The security suite probes a JobManager as an attacker on the same
// machine would. These tests are the browser's part: a page of another
// origin, and a page that reached the API under a name of its own.

// driveByScript is the "program" an attacking page uploads: it leaves a
// mark when the JobManager runs it to learn its plan.
func driveByScript(marker string) string {
	return "#!/bin/sh\necho ran > " + marker + "\n"
}

// driveByPage uploads script as a program and runs it with the two
// requests a browser sends across origins without asking the server
// first (multipart and text/plain bodies, no custom headers, no-cors),
// then sets the title to "done" once both requests have ended, whatever
// their answers: the page cannot read them, nor does it need to.
func driveByPage(rest, script string) string {
	sum := sha256.Sum256([]byte(script))
	jar := hex.EncodeToString(sum[:]) + "_evil.sh"
	return fmt.Sprintf(`<!doctype html><title>loading</title><script>
(async () => {
	const fd = new FormData();
	fd.append("jarfile", new Blob([%q]), "evil.sh");
	const send = (path, init) => fetch(%q + path, Object.assign({method: "POST", mode: "no-cors"}, init)).catch((e) => { document.body.dataset.error = String(e); });
	await send("/jars/upload", {body: fd});
	await send("/jars/%s/run", {body: "", headers: {"Content-Type": "text/plain"}});
	document.title = "done";
})();
</script>`, script, rest, jar)
}

// TestBrowserPageOfAnotherOriginCannotRunAProgram: a page served from
// 127.0.0.2, open in a browser on the JobManager's machine, must not get
// a default JobManager (loopback, no token) to run a program it uploads.
func TestBrowserPageOfAnotherOriginCannotRunAProgram(t *testing.T) {
	browser := chromiumPath(t)
	t.Parallel()
	dir := t.TempDir()
	_, _, rest := startJobManager(t, nil, "-D", "process.working-dir="+filepath.Join(dir, "jm"))
	marker := filepath.Join(dir, "marker")

	// The attacker's server: 127.0.0.2 is loopback too on Linux, and
	// another origin than the JobManager's 127.0.0.1.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 to serve the attacking page from: %v", err)
	}
	page := driveByPage(rest, driveByScript(marker))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, page)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	b, _ := openBrowser(t, browser, dir, testArtifacts(t), "driveby", 60*time.Second)
	b.do("open the attacking page", chromedp.Navigate("http://"+ln.Addr().String()+"/"))
	b.waitJS("the page's requests ended", `document.title === 'done'`, 45*time.Second)
	if e := browserValue[string](b, `document.body.dataset.error || ''`); e != "" {
		t.Logf("the page's fetch failed: %s", e)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the JobManager ran the program that a page of another origin uploaded")
	}
	if jars := getBody(t, rest+"/jars", ""); strings.Contains(jars, "evil.sh") {
		t.Fatalf("the JobManager kept the program a page of another origin uploaded: GET /jars = %s", jars)
	}
}

// TestBrowserPageUnderAnotherNameCannotUseTheAPI: DNS rebinding. A name
// of the attacker's that resolves to 127.0.0.1 (here through chromium's
// resolver rules) puts the attacker's page at the same origin as the
// API; every request it makes carries that name in Host, and the server
// must refuse them, reads and the dashboard included.
func TestBrowserPageUnderAnotherNameCannotUseTheAPI(t *testing.T) {
	browser := chromiumPath(t)
	t.Parallel()
	dir := t.TempDir()
	_, _, rest := startJobManager(t, nil, "-D", "process.working-dir="+filepath.Join(dir, "jm"))
	port := rest[strings.LastIndex(rest, ":")+1:]
	marker := filepath.Join(dir, "marker")
	script := driveByScript(marker)

	b, _ := openBrowser(t, browser, dir, testArtifacts(t), "rebinding", 60*time.Second,
		chromedp.Flag("host-resolver-rules", "MAP evil.example 127.0.0.1"))
	b.do("open the API under the attacker's name", chromedp.Navigate("http://evil.example:"+port+"/"))
	// What the attacker's script would do once the name points here:
	// same-origin requests, whose answers it may read.
	status, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(async () => {
		const fd = new FormData();
		fd.append("jarfile", new Blob([%q]), "evil.sh");
		const up = await fetch("/jars/upload", {method: "POST", body: fd});
		const ov = await fetch("/overview");
		return up.status + " " + ov.status;
	})()`, script), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the attacker's requests: %v", err)
	}
	if status != "421 421" {
		t.Errorf("a page under the name evil.example got %s for POST /jars/upload and GET /overview, want 421 421", status)
	}
	if jars := getBody(t, rest+"/jars", ""); strings.Contains(jars, "evil.sh") {
		t.Fatalf("a page under another name uploaded a program: GET /jars = %s", jars)
	}

	// The same requests under the server's own names pass.
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		req, _ := http.NewRequest(http.MethodGet, rest+"/overview", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /overview with Host %s: %s", host, resp.Status)
		}
	}
}

// getBody GETs url (with token, if any) and returns the body.
func getBody(t *testing.T, url, token string) string {
	t.Helper()
	_, body := restGet(t, url, token)
	return body
}

// restGet GETs url (with token, if any) and returns the status and body.
func restGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
