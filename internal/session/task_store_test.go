package session_test

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/session"
	"github.com/mcpfleet/mcpfleet/internal/session/tasktest"
)

func TestMemoryTasksContract(t *testing.T) { tasktest.Contract(t, session.NewTasks(0), false) }
