package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/mcpfleet/mcpfleet/internal/sim"
)

// MaxResultBody bounds the body of POST /api/validate: a run's result with
// its timeline (an hour of twelve replicas is about 300 KiB).
const MaxResultBody = 4 << 20

// errResultTooLarge marks a result over MaxResultBody.
var errResultTooLarge = errors.New("result over 4 MiB")

// ValidateResponse is the answer of POST /api/validate to a result that
// matches sim.ResultSchema.
type ValidateResponse struct {
	// Valid is true.
	Valid bool `json:"valid"`
	// Real reports that the result carries a run member: a real run's.
	Real bool `json:"real"`
}

// validate answers POST /api/validate: 1. read the bounded body; 2. check
// it against sim.ResultSchema under the concurrency bound; 3. answer.
func (h *Handler) validate(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxResultBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSON(w, http.StatusRequestEntityTooLarge, apiError{Error: errResultTooLarge.Error()})
			return
		}
		writeJSON(w, http.StatusBadRequest, apiError{Error: fmt.Sprintf("reading result: %v", err)})
		return
	}
	if !h.acquire(r) {
		return
	}
	defer h.release()
	if err := sim.ValidateResultJSON(b); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, ValidateResponse{Valid: true, Real: isReal(b)})
}

// isReal reports whether a valid result, bare or inside its mission, has a
// run member.
func isReal(b []byte) bool {
	var doc struct {
		Run    json.RawMessage `json:"run"`
		Result *struct {
			Run json.RawMessage `json:"run"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return false
	}
	return doc.Run != nil || (doc.Result != nil && doc.Result.Run != nil)
}
