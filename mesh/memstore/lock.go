package memstore

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// storeLock is the store's readers-writer lock. Unlike sync.RWMutex, a
// writer can wait for it bounded by its context: Put and Delete take a
// context, and return when it ends even while a large read (a live query's
// Initial over a million nodes) holds the store. Waiters are served in
// order, so a waiting writer holds back the readers that come after it, as
// sync.RWMutex does.
type storeLock struct{ sem *semaphore.Weighted }

// writerWeight is a writer's share of the lock: all of it, since no reader
// ever holds more than one unit and there are fewer readers than this.
const writerWeight = 1 << 30

func newStoreLock() storeLock { return storeLock{sem: semaphore.NewWeighted(writerWeight)} }

// RLock takes the lock for reading; readers wait only for writers, whose
// hold is bounded by the in-memory work of one write.
func (l storeLock) RLock() { _ = l.sem.Acquire(context.Background(), 1) }

// RLockContext takes the lock for reading, or returns ctx's error when ctx
// ends first: a reader queued behind a waiting writer waits for the reads
// before that writer too, however long they are.
func (l storeLock) RLockContext(ctx context.Context) error { return l.sem.Acquire(ctx, 1) }

// TryRLock takes the lock for reading if that needs no wait.
func (l storeLock) TryRLock() bool { return l.sem.TryAcquire(1) }

func (l storeLock) RUnlock() { l.sem.Release(1) }

// Lock takes the lock for writing, waiting as long as it takes (Close,
// the security fold's own bookkeeping).
func (l storeLock) Lock() { _ = l.sem.Acquire(context.Background(), writerWeight) }

// LockContext takes the lock for writing, or returns ctx's error when ctx
// ends first.
func (l storeLock) LockContext(ctx context.Context) error {
	return l.sem.Acquire(ctx, writerWeight)
}

func (l storeLock) Unlock() { l.sem.Release(writerWeight) }
