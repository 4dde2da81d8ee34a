package trainer

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"tunebot/session"
)

func TestRemoteStartable(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		attach *session.Proc
		want   string // "" : may start
	}{
		{name: "new job", ctx: live},
		{name: "new job, context ended", ctx: ended, want: "train job cancelled: context canceled"},
		{name: "re-attach a Slurm job", ctx: live, attach: &session.Proc{SlurmJob: "42"}},
		{name: "re-attach a Slurm job, context ended: follow decides", ctx: ended, attach: &session.Proc{SlurmJob: "42"}},
		{name: "re-attach a local process", ctx: live, attach: &session.Proc{PID: 7},
			want: "train job: cannot attach to a local process (pid 7); only a Slurm or Ray job is re-attached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := remoteStartable(tt.ctx, jobSpec{kind: "train", attach: tt.attach})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("remoteStartable = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLocalOutcome(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name, stopped, state string
		success              bool
		want                 jobOutcome
		cancelled            bool
	}{
		{name: "clean exit", success: true, state: "exit status 0"},
		{name: "non-zero exit", state: "exit status 3", want: jobOutcome{failed: "exit status 3"}},
		{name: "killed by a signal", state: "signal: killed", want: jobOutcome{failed: "signal: killed"}},
		{name: "timed out, even if the exit was clean", stopped: "timed out after 1s", success: true, want: jobOutcome{failed: "timed out after 1s"}},
		{name: "cancelled", stopped: "cancelled", state: "signal: terminated", cancelled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := localOutcome(ended, "evaluate", tt.stopped, tt.success, tt.state)
			if tt.cancelled != (err != nil) {
				t.Fatalf("err = %v, want an error: %v", err, tt.cancelled)
			}
			if tt.cancelled && (!errors.Is(err, context.Canceled) || err.Error() != "evaluate job cancelled: context canceled") {
				t.Errorf("err = %v, want the cancel wrapped", err)
			}
			if got != tt.want {
				t.Errorf("outcome = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPlaceFrames(t *testing.T) {
	// stsc builds a sample-to-chunk table: runs of {first chunk (from 1), frames per chunk}.
	stsc := func(declared int, runs ...[2]uint32) box {
		b := binary.BigEndian.AppendUint32(nil, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(declared))
		for _, r := range runs {
			b = binary.BigEndian.AppendUint32(b, r[0])
			b = binary.BigEndian.AppendUint32(b, r[1])
			b = binary.BigEndian.AppendUint32(b, 1)
		}
		return box{typ: "stsc", body: b}
	}
	media := [][2]int{{0, 100}}
	tests := []struct {
		name    string
		tables  []box
		offsets []uint64
		frames  int
		want    string // "" : every frame placed
	}{
		{name: "two chunks of two", tables: []box{stsc(1, [2]uint32{1, 2})}, offsets: []uint64{0, 20}, frames: 4},
		{name: "runs of one then three", tables: []box{stsc(2, [2]uint32{1, 1}, [2]uint32{2, 3})}, offsets: []uint64{0, 50}, frames: 4},
		{name: "more chunks than frames", tables: []box{stsc(1, [2]uint32{1, 2})}, offsets: []uint64{0, 20, 40}, frames: 3},
		{name: "a frame past the media data", tables: []box{stsc(1, [2]uint32{1, 2})}, offsets: []uint64{0, 95}, frames: 4,
			want: "truncated MP4: frame 3 of 4 lies outside the media data"},
		{name: "frames left over", tables: []box{stsc(1, [2]uint32{1, 2})}, offsets: []uint64{0, 20}, frames: 5,
			want: "the MP4's chunk tables place 4 of its 5 frames"},
		{name: "a chunk it does not have", tables: []box{stsc(1, [2]uint32{4, 2})}, offsets: []uint64{0, 20}, frames: 4,
			want: "the MP4's sample-to-chunk table names chunks it does not have"},
		{name: "no table", offsets: []uint64{0}, frames: 1,
			want: "the MP4's video track has no sample-to-chunk table (stsc)"},
		{name: "table cut off", tables: []box{stsc(2, [2]uint32{1, 2})}, offsets: []uint64{0}, frames: 1,
			want: "truncated MP4: the sample-to-chunk table is cut off"},
		{name: "empty table", tables: []box{stsc(0)}, offsets: []uint64{0}, frames: 1,
			want: "truncated MP4: the sample-to-chunk table is cut off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := placeFrames(tt.tables, tt.offsets, sampleSizes{fixed: 10, count: tt.frames}, media)
			got := ""
			if err != nil {
				got = strings.TrimPrefix(err.Error(), "clip refused: ")
			}
			if got != tt.want {
				t.Errorf("placeFrames = %q, want %q", got, tt.want)
			}
		})
	}
}
