//! Streams counts into bins while a run goes (placeholder).
