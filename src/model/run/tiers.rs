//! The tiers of a run, indexed as one list: tier 0 ([`TOP`]) is the top
//! backend, tier `k ≥ 1` is `downstream[k − 1]`.
//!
//! The top is held in place beside the list of the tiers below, not first
//! in a vector: most events of a run are the top's, and the lifecycle's
//! functions that know they run for the top (`IS_TOP`, see `life.rs`)
//! index it at the constant [`TOP`], which then reads a field of the run
//! itself instead of following the vector's pointer first.

use super::TOP;
use crate::model::tier::Tier;
use std::ops::{Index, IndexMut};

/// The top tier and the tiers below it.
#[derive(Clone)]
pub(super) struct Tiers<'a> {
    top: Tier<'a>,
    below: Vec<Tier<'a>>,
}

impl<'a> Tiers<'a> {
    /// The tiers of a run whose top backend is `top`, none below yet.
    pub(super) fn new(top: Tier<'a>) -> Tiers<'a> {
        Tiers {
            top,
            below: Vec::new(),
        }
    }

    /// Adds the next tier below.
    pub(super) fn push(&mut self, tier: Tier<'a>) {
        self.below.push(tier);
    }

    /// Number of tiers, the top included.
    pub(super) fn len(&self) -> usize {
        1 + self.below.len()
    }

    /// The top and the tiers below it, apart.
    pub(super) fn split_top_mut(&mut self) -> (&mut Tier<'a>, &mut [Tier<'a>]) {
        (&mut self.top, &mut self.below)
    }

    /// Every tier, the top first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Tier<'a>> {
        std::iter::once(&self.top).chain(self.below.iter())
    }

    /// Every tier, the top first.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Tier<'a>> {
        std::iter::once(&mut self.top).chain(self.below.iter_mut())
    }

    /// Every tier, the top first, taken out of the run.
    pub(super) fn into_vec(self) -> Vec<Tier<'a>> {
        let mut all = Vec::with_capacity(self.len());
        all.push(self.top);
        all.extend(self.below);
        all
    }
}

impl<'a> Index<usize> for Tiers<'a> {
    type Output = Tier<'a>;

    #[inline(always)]
    fn index(&self, k: usize) -> &Tier<'a> {
        if k == TOP {
            &self.top
        } else {
            &self.below[k - 1]
        }
    }
}

impl<'a> IndexMut<usize> for Tiers<'a> {
    #[inline(always)]
    fn index_mut(&mut self, k: usize) -> &mut Tier<'a> {
        if k == TOP {
            &mut self.top
        } else {
            &mut self.below[k - 1]
        }
    }
}
