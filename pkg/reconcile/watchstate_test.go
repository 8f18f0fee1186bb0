package reconcile

import (
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type versionStub struct{ rv string }

func (v *versionStub) LastSyncResourceVersion() string { return v.rv }

// TestWatermarkWaitsForAWatchToListAgain: while the watch of ConfigMaps is
// cut (edits are neither pending nor seen), the watermark stays at the
// moment the informer was last known in sync (the look before the one that
// saw its version move: the move may have come right after that look),
// however long the cut lasts; once the informer has listed again it
// follows the clock again.
func TestWatermarkWaitsForAWatchToListAgain(t *testing.T) {
	f := newRoundFixture(t)
	cms := &versionStub{rv: "10"}
	st := f.loop.watchOf("ConfigMaps", cms)
	f.loop.watchOf("Secrets", &versionStub{rv: "7"})
	if got, want := f.loop.actedUntil(), f.now.Add(-watermarkMargin); !got.Equal(want) {
		t.Fatalf("every watch well: %s, want now less the margin %s", got, want)
	}
	inSync := f.now // the last look before the version moved: known in sync then
	f.now = f.now.Add(time.Minute)
	cms.rv = "11" // an event or a bookmark, at some moment of that minute
	f.loop.actedUntil()
	f.now = f.now.Add(20 * time.Second)
	f.loop.watchFailed(st)
	f.now = f.now.Add(5 * time.Minute)
	if got, want := f.loop.actedUntil(), inSync.Add(-watermarkMargin); !got.Equal(want) {
		t.Errorf("5 min into a cut watch: %s, want the moment it was last in sync less the margin %s", got, want)
	}
	f.loop.watchFailed(st) // the retries fail too: the first failure holds
	if got, want := f.loop.actedUntil(), inSync.Add(-watermarkMargin); !got.Equal(want) {
		t.Errorf("after a second failure: %s, want %s", got, want)
	}
	cms.rv = "42" // listed again
	if got, want := f.loop.actedUntil(), f.now.Add(-watermarkMargin); !got.Equal(want) {
		t.Errorf("listed again: %s, want now less the margin %s", got, want)
	}
}

// TestWatermarkHoldsThroughASecondCut: a watch that fails, lists again
// and fails again before the loop looks is cut a second time: the
// watermark stays at or before the last look before that list (the
// informer was known in sync no later than the list), not the clock,
// until the informer has listed again after the second failure.
func TestWatermarkHoldsThroughASecondCut(t *testing.T) {
	f := newRoundFixture(t)
	cms := &versionStub{rv: "10"}
	st := f.loop.watchOf("ConfigMaps", cms)
	f.now = f.now.Add(time.Minute)
	f.loop.actedUntil()
	f.now = f.now.Add(20 * time.Second)
	f.loop.watchFailed(st) // the first cut
	f.now = f.now.Add(time.Minute)
	lastLook := f.now
	f.loop.actedUntil() // still cut
	f.now = f.now.Add(10 * time.Second)
	cms.rv = "11" // listed again: in sync at this moment, after the last look
	f.now = f.now.Add(10 * time.Second)
	f.loop.watchFailed(st) // cut again (a 429 storm) before the loop looks
	f.now = f.now.Add(5 * time.Minute)
	if got, limit := f.loop.actedUntil(), lastLook.Add(-watermarkMargin); got.After(limit) {
		t.Errorf("5 min into the second cut: %s, want at most the last look before the list less the margin %s", got, limit)
	}
	cms.rv = "12" // listed again after the second cut
	if got, want := f.loop.actedUntil(), f.now.Add(-watermarkMargin); !got.Equal(want) {
		t.Errorf("listed again: %s, want now less the margin %s", got, want)
	}
}

// TestWatermarkHoldsAnEditTheRelistDelivered: an edit made during a cut
// reaches the loop when the informer lists again, minutes after it was
// made. While its change is pending or being acted on, the watermark
// stays before the edit's own time (the object's last write), not before
// the moment the relist delivered it: a new leader would otherwise take
// the edit as older than the watermark and leave its consumers with no
// record alone.
func TestWatermarkHoldsAnEditTheRelistDelivered(t *testing.T) {
	f := newRoundFixture(t)
	cms := &versionStub{rv: "10"}
	st := f.loop.watchOf("ConfigMaps", cms)
	f.loop.actedUntil()
	f.loop.watchFailed(st)
	f.now = f.now.Add(time.Minute)
	edited := metav1.NewTime(f.now) // made during the cut
	old := configMap("a", map[string]string{"K": "1", "X": "x"})
	cur := configMap("a", map[string]string{"K": "2", "X": "x"})
	cur.ManagedFields = []metav1.ManagedFieldsEntry{{Time: &edited}}
	f.now = f.now.Add(5 * time.Minute)
	cms.rv = "42" // listed again: the edit is delivered now
	f.loop.noteChange(inspect.ConfigMapObject(old), inspect.ConfigMapObject(cur))
	if got, limit := f.loop.actedUntil(), edited.Add(-watermarkMargin); got.After(limit) {
		t.Errorf("an edit made during the cut, pending: %s, want at most its time less the margin %s", got, limit)
	}
	f.loop.take("ns")
	if got, limit := f.loop.actedUntil(), edited.Add(-watermarkMargin); got.After(limit) {
		t.Errorf("taken by a round: %s, want at most %s", got, limit)
	}
	f.loop.untake("ns")
	if got, want := f.loop.actedUntil(), f.now.Add(-watermarkMargin); !got.Equal(want) {
		t.Errorf("once acted on: %s, want now less the margin %s", got, want)
	}
}
