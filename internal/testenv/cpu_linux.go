package testenv

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100 on
// every architecture Linux runs Go on.
const userHZ = 100

// processCPU returns the CPU time, user and system, that process pid and
// all its threads have used.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces; the
	// fields after it start with the state, field 3. utime and stime are
	// fields 14 and 15.
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("reading /proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(data[end+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("reading /proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
