//! A slab of values addressed by small ids, with a free list. A slot is live from
//! `alloc` until `free`; freeing twice or using a freed slot panics. Memory is
//! bounded by the most values ever live at once, not by how many were allocated.

pub struct Slab<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    live: usize,
    what: &'static str,
}

impl<T> Slab<T> {
    pub const fn new(what: &'static str) -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            what,
        }
    }
    pub fn alloc(&mut self, v: T) -> u32 {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            debug_assert!(self.slots[i as usize].is_none());
            self.slots[i as usize] = Some(v);
            i
        } else {
            self.slots.push(Some(v));
            self.slots.len() as u32 - 1
        }
    }
    pub fn get(&self, i: u32) -> &T {
        match self.slots.get(i as usize) {
            Some(Some(v)) => v,
            _ => panic!("use of a freed {}", self.what),
        }
    }
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        let what = self.what;
        match self.slots.get_mut(i as usize) {
            Some(Some(v)) => v,
            _ => panic!("use of a freed {what}"),
        }
    }
    pub fn free(&mut self, i: u32) -> T {
        let what = self.what;
        let v = self.slots[i as usize]
            .take()
            .unwrap_or_else(|| panic!("{what} freed twice"));
        self.free.push(i);
        self.live -= 1;
        v
    }
    /// Free slot `i`, dropping its value in place.
    pub fn remove(&mut self, i: u32) {
        let slot = &mut self.slots[i as usize];
        if slot.is_none() {
            panic!("{} freed twice", self.what);
        }
        *slot = None;
        self.free.push(i);
        self.live -= 1;
    }
    pub fn live(&self) -> usize {
        self.live
    }
}
