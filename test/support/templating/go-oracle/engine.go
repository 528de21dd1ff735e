// Package main renders ESO-style Go templates (text/template with the Sprig function
// set minus env/expandenv, plus ESO's own helpers): the oracle ESI's TypeScript engine
// (src/templating/go/) is tested against, built natively for the tests only
// (docs/decisions/0087-templating-engines.md). One request holds every template of a job;
// values cross the boundary base64-encoded because secret values are bytes, not text.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"text/template"
)

// Request is one batch of templates.
type Request struct {
	// Functions asks for the names of every function templates may call.
	Functions bool `json:"functions,omitempty"`
	// ParseOnly checks syntax (and that every function exists) without executing.
	ParseOnly bool `json:"parseOnly,omitempty"`
	// MaxOutput bounds each rendered result, in bytes.
	MaxOutput int `json:"maxOutput,omitempty"`
	// Data is the context of every job without its own (values base64).
	Data map[string]string `json:"data,omitempty"`
	Jobs []Job             `json:"jobs"`
}

// Job is one template.
type Job struct {
	Name   string            `json:"name"`
	Source string            `json:"source"`
	Data   map[string]string `json:"data,omitempty"`
}

// Result is the output (base64) or the error of one job.
type Result struct {
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

type Response struct {
	Results   []Result `json:"results,omitempty"`
	Functions []string `json:"functions,omitempty"`
	Error     string   `json:"error,omitempty"`
}

const defaultMaxOutput = 1 << 20

var errTooLarge = errors.New("rendered output exceeds the size limit")

// limitedBuffer fails a template's execution as soon as it writes more than max bytes, so
// a runaway range stops early instead of filling memory.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, errTooLarge
	}
	return b.Buffer.Write(p)
}

func decodeData(in map[string]string) (map[string]string, []string, error) {
	out := make(map[string]string, len(in))
	values := make([]string, 0, len(in))
	for k, v := range in {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, nil, errors.New("data value of key " + k + " is not base64")
		}
		out[k] = string(raw)
		values = append(values, string(raw))
	}
	return out, values, nil
}

// redact removes secret values from an error message: Go's and Sprig's messages may quote
// the data they failed on.
func redact(msg string, values []string) string {
	for _, v := range values {
		if len(v) >= 3 {
			msg = strings.ReplaceAll(msg, v, "<redacted>")
		}
	}
	return msg
}

func newTemplate(name string) *template.Template {
	// ESO's engine: missing keys are errors, not "<no value>".
	return template.New(name).Option("missingkey=error").Funcs(funcMap())
}

func runJob(req *Request, job Job, shared map[string]string, sharedValues []string) Result {
	t, err := newTemplate(job.Name).Parse(job.Source)
	if err != nil {
		return Result{Error: err.Error()}
	}
	if req.ParseOnly {
		return Result{}
	}
	data, values := shared, sharedValues
	if job.Data != nil {
		if data, values, err = decodeData(job.Data); err != nil {
			return Result{Error: err.Error()}
		}
	}
	max := req.MaxOutput
	if max <= 0 {
		max = defaultMaxOutput
	}
	buf := &limitedBuffer{max: max}
	if err := t.Execute(buf, data); err != nil {
		if errors.Is(err, errTooLarge) || strings.Contains(err.Error(), errTooLarge.Error()) {
			return Result{Error: "template: " + job.Name + ": " + errTooLarge.Error()}
		}
		return Result{Error: redact(err.Error(), values)}
	}
	return Result{Output: base64.StdEncoding.EncodeToString(buf.Bytes())}
}

// Handle runs one JSON request and returns the JSON response.
func Handle(in []byte) []byte {
	var req Request
	resp := Response{}
	if err := json.Unmarshal(in, &req); err != nil {
		resp.Error = "invalid request: " + err.Error()
	} else if req.Functions {
		for name := range funcMap() {
			resp.Functions = append(resp.Functions, name)
		}
		sort.Strings(resp.Functions)
	} else if shared, values, err := decodeData(req.Data); err != nil {
		resp.Error = err.Error()
	} else {
		resp.Results = make([]Result, len(req.Jobs))
		for i, job := range req.Jobs {
			resp.Results[i] = runJob(&req, job, shared, values)
		}
	}
	out, _ := json.Marshal(resp)
	return out
}
