//! A slab of packets with a free list: a packet in flight is a `u32` slot
//! index, slots are reused, so the steady state allocates nothing.

/// Slots of `T`, handed out and returned by index.
#[derive(Debug)]
pub struct Arena<T> {
    slots: Vec<T>,
    free: Vec<u32>,
}

impl<T> Arena<T> {
    pub fn new() -> Self {
        Arena {
            slots: Vec::with_capacity(1024),
            free: Vec::with_capacity(1024),
        }
    }

    /// Stores `v`, reusing a free slot when there is one.
    #[inline]
    pub fn alloc(&mut self, v: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = v;
                i
            }
            None => {
                self.slots.push(v);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Returns slot `i` to the free list (its value stays until reused).
    #[inline]
    pub fn free(&mut self, i: u32) {
        debug_assert!(!self.free.contains(&i), "double free of slot {i}");
        self.free.push(i);
    }

    #[inline]
    pub fn get(&self, i: u32) -> &T {
        &self.slots[i as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        &mut self.slots[i as usize]
    }

    /// Slots in use.
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Slots ever allocated (the high-water mark).
    #[cfg(test)]
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_slots_are_reused_before_growing() {
        let mut a = Arena::new();
        let x = a.alloc(1);
        let y = a.alloc(2);
        a.free(x);
        assert_eq!(a.live(), 1);
        let z = a.alloc(3);
        assert_eq!(z, x);
        assert_eq!((*a.get(y), *a.get(z)), (2, 3));
        assert_eq!(a.capacity_used(), 2);
    }
}
