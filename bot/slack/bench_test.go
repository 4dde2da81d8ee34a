package slack_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/bot/slack/slacktest"
)

var benchMsg = &slacktest.Message{Channel: "CTUNE", TS: "1.1", ThreadTS: "1.0"}

// BenchmarkAckLatency sends 50 interactions at once over Socket Mode to the adapter (a
// /tune status and button clicks, half by a stranger) and measures, per envelope, the time
// from the fake's send to the adapter's acknowledgement read back; it reports p50 and p99
// in milliseconds (Slack allows 3000).
func BenchmarkAckLatency(b *testing.B) {
	r := newRig(b, "socket")
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		ids := make([]string, 50)
		sent := make([]time.Time, 50)
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var payload map[string]any
				typ := "interactive"
				switch i % 3 {
				case 0:
					typ, payload = "slash_commands", r.fake.Slash("UALICE", "CTUNE", "status")
				case 1:
					payload = r.fake.Click("UEVE", benchMsg, bot.ActionID(bot.ButtonApprove, "sess-b", "p1"))
				default:
					payload = r.fake.Click("UALICE", benchMsg, bot.ActionID(bot.ButtonPause, "sess-b", "p1"))
				}
				sent[i] = time.Now()
				id, err := r.fake.Send(typ, payload)
				if err != nil {
					b.Error(err)
				}
				ids[i] = id
			}()
		}
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for i, id := range ids {
			a, err := r.fake.WaitAck(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, a.At.Sub(sent[i]))
		}
		cancel()
		r.ad.Wait()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1])/float64(time.Millisecond), "max-ms")
}
