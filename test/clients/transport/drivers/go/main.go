// Transport driver: Go's net/http with the default Transport (Prysm's remote signer client is a
// net/http Client), standard library only. Speaks the line protocol of ../protocol.mjs: one JSON
// command per line on standard input, one JSON answer per line on standard output.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

type request struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Body    *string           `json:"body"`
	Headers map[string]string `json:"headers"`
}

type command struct {
	Op          string    `json:"op"`
	Base        string    `json:"base"`
	Requests    []request `json:"requests"`
	Concurrency int       `json:"concurrency"`
	Close       bool      `json:"close"`
}

type result struct {
	Status     *int    `json:"status"`
	Body       *string `json:"body"`
	Connection *string `json:"connection"`
	KeepAlive  *string `json:"keepAlive"`
	RequestID  *string `json:"requestId"`
	Error      *string `json:"error"`
}

// One client for the life of the process: its Transport's pool is what the harness exercises
// across idle timeouts and restarts. Prysm sets a timeout and otherwise keeps net/http's defaults.
var client = &http.Client{Timeout: 30 * time.Second}

func header(response *http.Response, name string) *string {
	values := response.Header.Values(name)
	if len(values) == 0 {
		// net/http moves "Connection: close" into Response.Close and drops the header.
		if name == "Connection" && response.Close {
			closed := "close"
			return &closed
		}
		return nil
	}
	joined := strings.Join(values, ", ")
	return &joined
}

func failure(err error) result {
	message := err.Error()
	return result{Error: &message}
}

func send(base string, r request, close bool) result {
	var body io.Reader
	if r.Body != nil {
		body = strings.NewReader(*r.Body)
	}
	outgoing, err := http.NewRequest(r.Method, base+r.Path, body)
	if err != nil {
		return failure(err)
	}
	for name, value := range r.Headers {
		outgoing.Header.Set(name, value)
	}
	// How a Go program asks for Connection: close: the Transport sends the header and retires the
	// connection after the response.
	outgoing.Close = close
	response, err := client.Do(outgoing)
	if err != nil {
		return failure(err)
	}
	defer response.Body.Close()
	bytes, err := io.ReadAll(response.Body)
	if err != nil {
		return failure(err)
	}
	status := response.StatusCode
	text := string(bytes)
	return result{
		Status:     &status,
		Body:       &text,
		Connection: header(response, "Connection"),
		KeepAlive:  header(response, "Keep-Alive"),
		RequestID:  header(response, "X-Request-Id"),
	}
}

func batch(c command) []result {
	results := make([]result, len(c.Requests))
	workers := c.Concurrency
	if workers < 1 {
		workers = 1
	}
	indexes := make(chan int)
	var group sync.WaitGroup
	for w := 0; w < workers; w++ {
		group.Add(1)
		go func() {
			defer group.Done()
			for index := range indexes {
				results[index] = send(c.Base, c.Requests[index], c.Close)
			}
		}()
	}
	for index := range c.Requests {
		indexes <- index
	}
	close(indexes)
	group.Wait()
	return results
}

func main() {
	input := bufio.NewScanner(os.Stdin)
	input.Buffer(make([]byte, 1<<20), 64<<20)
	output := json.NewEncoder(os.Stdout)
	for input.Scan() {
		line := strings.TrimSpace(input.Text())
		if line == "" {
			continue
		}
		var c command
		var answer interface{}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			answer = map[string]string{"error": "driver: " + err.Error()}
		} else {
			switch c.Op {
			case "exit":
				return
			case "version":
				answer = map[string]string{"version": fmt.Sprintf("%s net/http (default Transport)", runtime.Version())}
			case "batch":
				answer = map[string][]result{"results": batch(c)}
			default:
				answer = map[string]string{"error": "unknown op " + c.Op}
			}
		}
		if err := output.Encode(answer); err != nil {
			os.Exit(1)
		}
	}
}
