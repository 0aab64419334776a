package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// MaxBody bounds a request body of the API.
const MaxBody = 64 << 10

// The lab's limits on a scenario, tighter than sim's own: a page redraws on
// every change, so one request must stay a few milliseconds of work.
const (
	maxTrafficSeconds = 3600
	maxCalls          = 100_000
)

// RunRequest is the body of POST /api/run.
type RunRequest struct {
	// Scenario is decoded over sim.Default(): keys left out keep their
	// defaults; unknown keys are errors.
	Scenario json.RawMessage `json:"scenario"`
	// Mission, when not zero, asks for the stars this scenario earns in
	// that mission (sim.Mission.Evaluate).
	Mission int `json:"mission,omitempty"`
}

// RunResponse is the answer of POST /api/run.
type RunResponse struct {
	// Result is every figure of the run.
	Result *sim.Result `json:"result"`
	// Stars are present when the request named a mission.
	Stars *sim.Stars `json:"stars,omitempty"`
}

// MissionView is a mission as the page sees it: its broken setup and
// goals, not its reference answer.
type MissionView struct {
	// Number is the mission's number, from 1.
	Number int `json:"number"`
	// Name is the mission's title.
	Name string `json:"name"`
	// Goal says what the fleet must achieve.
	Goal string `json:"goal"`
	// Efficient says what the three-star answer must also respect.
	Efficient string `json:"efficient"`
	// Broken is the setup "Load mission setup" loads.
	Broken sim.Scenario `json:"broken"`
}

// apiError is the JSON of a refused request; Field is the scenario's JSON
// key at fault, when one is.
type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func (h *Handler) defaults(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, sim.Default())
}

func (h *Handler) missions(w http.ResponseWriter, _ *http.Request) {
	ms := sim.Missions()
	out := make([]MissionView, len(ms))
	for i, m := range ms {
		out[i] = MissionView{Number: m.Number, Name: m.Name, Goal: m.Goal, Efficient: m.Efficient, Broken: m.Broken}
	}
	writeJSON(w, http.StatusOK, out)
}

// run answers POST /api/run: 1. read the bounded body; 2. decode and check
// the scenario; 3. run it (and the mission's evaluation) under the
// concurrency bound; 4. answer.
func (h *Handler) run(w http.ResponseWriter, r *http.Request) {
	req, s, err := decodeRun(w, r)
	if err != nil {
		writeJSON(w, statusOf(err), errorBody(err))
		return
	}
	if !h.acquire(r) {
		return
	}
	defer h.release()
	resp, err := simulate(req.Mission, s)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(err))
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// acquire takes a token of h.runs, waiting for one; it reports false when
// the request ends first.
func (h *Handler) acquire(r *http.Request) bool {
	select {
	case h.runs <- struct{}{}:
		return true
	case <-r.Context().Done():
		return false
	}
}

// release gives back the token acquire took.
func (h *Handler) release() { <-h.runs }

// simulate runs s and, when mission is not zero, evaluates it there.
func simulate(mission int, s sim.Scenario) (*RunResponse, error) {
	res, err := sim.Run(s)
	if err != nil {
		return nil, err
	}
	resp := &RunResponse{Result: res}
	if mission != 0 {
		m, err := sim.MissionByNumber(mission)
		if err != nil {
			return nil, err
		}
		st, err := m.Evaluate(s)
		if err != nil {
			return nil, err
		}
		resp.Stars = &st
	}
	return resp, nil
}

// errTooLarge marks a body over MaxBody.
var errTooLarge = errors.New("request body over 64 KiB")

// decodeRun reads and checks a run request.
func decodeRun(w http.ResponseWriter, r *http.Request) (RunRequest, sim.Scenario, error) {
	var req RunRequest
	s := sim.Default()
	body := http.MaxBytesReader(w, r.Body, MaxBody)
	if err := strictDecode(body, &req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return req, s, errTooLarge
		}
		return req, s, fmt.Errorf("decoding run request: %w", err)
	}
	if len(req.Scenario) > 0 {
		if err := strictDecode(bytes.NewReader(req.Scenario), &s); err != nil {
			return req, s, fmt.Errorf("decoding scenario: %w", err)
		}
	}
	if req.Mission != 0 {
		if _, err := sim.MissionByNumber(req.Mission); err != nil {
			return req, s, err
		}
	}
	if err := s.Validate(); err != nil {
		return req, s, err
	}
	return req, s, checkLabLimits(&s)
}

// strictDecode decodes one JSON value from r into v; unknown keys and
// trailing data are errors.
func strictDecode(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// checkLabLimits keeps one request a few milliseconds of work.
func checkLabLimits(s *sim.Scenario) error {
	if s.TrafficSeconds > maxTrafficSeconds {
		return fmt.Errorf("scenario: traffic_s %g over the lab's limit of %d", s.TrafficSeconds, maxTrafficSeconds)
	}
	if calls := s.TotalRate() * s.TrafficSeconds; calls > maxCalls {
		return fmt.Errorf("scenario: arrival_rate %g for traffic_s %g is about %.0f calls, over the lab's limit of %d", s.ArrivalRate, s.TrafficSeconds, calls, maxCalls)
	}
	return nil
}

func statusOf(err error) int {
	if errors.Is(err, errTooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// errorBody names the scenario field an error is about: sim's and the
// lab's checks say "scenario: <json key> ...".
func errorBody(err error) apiError {
	e := apiError{Error: err.Error()}
	if rest, ok := strings.CutPrefix(e.Error, "scenario: "); ok {
		e.Field, _, _ = strings.Cut(rest, " ")
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		e.Field = ute.Field
	}
	if rest, ok := strings.CutPrefix(e.Error, "decoding scenario: json: unknown field "); ok {
		e.Field = strings.Trim(rest, `"`)
	}
	return e
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding answer", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
