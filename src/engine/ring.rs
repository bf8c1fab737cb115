//! A first-in first-out ring of small `Copy` values whose push is always
//! inlined into its caller.
//!
//! The event queue pushes an event for nearly every step of a run. Through
//! `std::collections::VecDeque` the compiler builds each event on the
//! stack, field by field, and passes it by address to a `push_back` it
//! keeps out of line, which reloads it in wider pieces than were stored: the
//! reload waits for the stores to land (a failed store-to-load forward).
//! A push inlined at every call site writes the fields straight into their
//! slot. Growing, the rare case, stays out of line.
//!
//! Every slot of the buffer holds a value (old values stay behind popped
//! ones), so the ring needs no `unsafe`: the new room of a growth is
//! filled with copies of the value being pushed.

/// A growable FIFO ring buffer of `Copy` values (see the module comment).
#[derive(Clone, Debug)]
pub struct Ring<T> {
    /// The slots; empty, or a power of two long.
    buf: Vec<T>,
    /// Index of the front value.
    head: usize,
    /// Values held.
    len: usize,
}

impl<T> Default for Ring<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Ring<T> {
    /// An empty ring; allocates on the first push.
    pub const fn new() -> Self {
        Ring {
            buf: Vec::new(),
            head: 0,
            len: 0,
        }
    }
}

impl<T: Copy> Ring<T> {
    /// Values held.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the ring holds nothing.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot of the `i`-th value from the front (`buf` not empty).
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        (self.head + i) & (self.buf.len() - 1)
    }

    /// Appends `v` at the back.
    #[inline(always)]
    pub fn push_back(&mut self, v: T) {
        if self.len == self.buf.len() {
            self.grow(v);
        }
        let at = self.slot(self.len);
        self.buf[at] = v;
        self.len += 1;
    }

    /// Doubles the room (16 slots at first). The buffer grows in place
    /// where the allocator can (a large one is remapped, not copied, and
    /// never held twice), and the values that had wrapped around to its
    /// start are copied to just past its old end, where they follow on
    /// from the others: `head` stays.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, fill: T) {
        debug_assert_eq!(self.len, self.buf.len(), "grows only when full");
        let room = (self.buf.len() * 2).max(16);
        self.buf.reserve_exact(room - self.buf.len());
        self.buf.extend_from_within(..self.head);
        self.buf.resize(room, fill);
    }

    /// Removes and returns the front value.
    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.head];
        self.head = self.slot(1);
        self.len -= 1;
        Some(v)
    }

    /// Removes and returns the back value.
    #[inline]
    pub fn pop_back(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(self.buf[self.slot(self.len)])
    }

    /// The front value.
    #[inline(always)]
    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    /// The back value.
    #[inline]
    pub fn back(&self) -> Option<&T> {
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }

    /// The `i`-th value from the front.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<&T> {
        (i < self.len).then(|| &self.buf[self.slot(i)])
    }

    /// The values from the `from`-th on, front to back (none when `from`
    /// is past the back).
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &T> + '_ {
        (from.min(self.len)..self.len).map(move |i| &self.buf[self.slot(i)])
    }

    /// The values, front to back.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.iter_from(0)
    }

    /// Inserts `v` so that it becomes the `at`-th value from the front
    /// (`at <= len`), moving the values behind it back by one.
    pub fn insert(&mut self, at: usize, v: T) {
        assert!(at <= self.len, "insert at {at} in a ring of {}", self.len);
        self.push_back(v);
        for i in (at + 1..self.len).rev() {
            let (a, b) = (self.slot(i - 1), self.slot(i));
            self.buf.swap(a, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    #[derive(Clone, Debug)]
    enum Op {
        Push(u32),
        PopFront,
        PopBack,
        Insert(usize, u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => any::<u32>().prop_map(Op::Push),
            3 => Just(Op::PopFront),
            1 => Just(Op::PopBack),
            1 => (any::<usize>(), any::<u32>()).prop_map(|(a, v)| Op::Insert(a, v)),
        ]
    }

    proptest! {
        /// Any sequence of operations leaves the ring holding what a
        /// `VecDeque` given the same operations holds, in the same order,
        /// across growth and wrap-around.
        #[test]
        fn behaves_as_a_vecdeque(ops in proptest::collection::vec(op(), 0..400)) {
            let mut ring = Ring::new();
            let mut model = VecDeque::new();
            for op in ops {
                match op {
                    Op::Push(v) => {
                        ring.push_back(v);
                        model.push_back(v);
                    }
                    Op::PopFront => prop_assert_eq!(ring.pop_front(), model.pop_front()),
                    Op::PopBack => prop_assert_eq!(ring.pop_back(), model.pop_back()),
                    Op::Insert(at, v) => {
                        let at = at % (model.len() + 1);
                        ring.insert(at, v);
                        model.insert(at, v);
                    }
                }
                prop_assert_eq!(ring.len(), model.len());
                prop_assert_eq!(ring.front(), model.front());
                prop_assert_eq!(ring.back(), model.back());
                prop_assert!(ring.iter().eq(model.iter()));
                let from = model.len() / 2;
                prop_assert!(ring.iter_from(from).eq(model.range(from..)));
            }
        }
    }

    #[test]
    fn grows_in_powers_of_two_keeping_order_across_the_wrap() {
        let mut ring = Ring::new();
        for v in 0..10u32 {
            ring.push_back(v);
        }
        // The front moves past slot 0, then the back wraps around it.
        for v in 0..6 {
            assert_eq!(ring.pop_front(), Some(v));
        }
        for v in 10..22 {
            ring.push_back(v);
        }
        assert_eq!(ring.buf.len(), 16);
        assert_eq!(ring.head, 6);
        ring.push_back(22); // 17 values: grows to 32
        assert_eq!(ring.buf.len(), 32);
        // The six values that had wrapped to slots 0..6 follow slot 15.
        assert_eq!(ring.head, 6);
        assert_eq!(ring.buf[16..22], [16, 17, 18, 19, 20, 21]);
        assert!(ring.iter().copied().eq(6..23));
        assert_eq!(ring.iter_from(40).count(), 0);
        assert_eq!(ring.get(17), None);
    }
}
