package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/clinksql/clinksql/engine"
)

// The JSON API the console reads: the engine's observation API (engine/observe.go) as it is, so that the console,
// SHOW JOBS and the clink_catalog tables never disagree. Lists are [] when empty, never null.

type jobsResponse struct {
	Jobs []engine.JobInfo `json:"jobs"`
}

type jobResponse struct {
	Job         engine.JobInfo          `json:"job"`
	Operators   []engine.OperatorInfo   `json:"operators"`
	Edges       []engine.EdgeInfo       `json:"edges"`
	Checkpoints []engine.CheckpointInfo `json:"checkpoints"`
}

func apiJobs(w http.ResponseWriter, r *http.Request, e *engine.Engine) {
	writeJSON(w, http.StatusOK, jobsResponse{Jobs: orEmpty(e.JobInfos())})
}

func apiJob(w http.ResponseWriter, r *http.Request, e *engine.Engine) {
	id := r.PathValue("id")
	job, ok := e.JobInfo(id)
	if !ok {
		writeJSON(w, http.StatusNotFound, errorResponse{Error: fmt.Sprintf("job %q does not exist", id)})
		return
	}
	writeJSON(w, http.StatusOK, jobResponse{Job: job, Operators: orEmpty(e.OperatorInfos(id)),
		Edges: orEmpty(e.EdgeInfos(id)), Checkpoints: orEmpty(e.CheckpointInfos(id))})
}

type errorResponse struct {
	Error string `json:"error"`
}

func apiNotFound(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, errorResponse{Error: fmt.Sprintf("no API endpoint %s %s", r.Method, r.URL.Path)})
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// writeJSON writes v as JSON, with times as RFC 3339 in UTC with milliseconds (what the console parses with
// Date), which encoding/json cannot be told to do for a time.Time field of a type it does not own.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	if err := encodeJSON(&b, reflect.ValueOf(v)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	b.WriteByte('\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff") // a job's query text is the user's: never sniffed as HTML
	w.Header().Set("Cache-Control", "no-store")         // live figures
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// jsonTime is how writeJSON writes a time.
const jsonTime = "2006-01-02T15:04:05.000Z07:00"

var timeType = reflect.TypeFor[time.Time]()

// encodeJSON writes v as encoding/json would (struct fields by their json tags, in order), but for times. It
// knows what the API's types are made of: structs, pointers, slices and values encoding/json writes itself.
func encodeJSON(b *bytes.Buffer, v reflect.Value) error {
	switch {
	case v.Type() == timeType:
		fmt.Fprintf(b, "%q", v.Interface().(time.Time).UTC().Format(jsonTime))
		return nil
	case v.Kind() == reflect.Float64 || v.Kind() == reflect.Float32:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			b.WriteString("null") // encoding/json refuses them; one odd rate must not fail the whole answer
			return nil
		}
	case v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		return encodeJSON(b, v.Elem())
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeJSON(b, v.Index(i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case v.Kind() == reflect.Struct:
		b.WriteByte('{')
		first := true
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			fmt.Fprintf(b, "%q:", name)
			if err := encodeJSON(b, v.Field(i)); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	}
	out, err := json.Marshal(v.Interface())
	if err != nil {
		return err
	}
	b.Write(out)
	return nil
}
