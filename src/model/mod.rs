//! What is simulated: traffic, the backend, faults and the clients' retry
//! behaviour. One [`run::simulate`] call is one (policy, replication) run.
//!
//! The run (`run.rs`) routes events between components that each own their
//! state: [`traffic`] (arrivals; [`replay`] for a trace of arrival times), [`requests`] (request slots and their
//! life), [`clients`] (budgets, breakers, retry decisions), [`network`]
//! (hop delays), [`backend`] (with [`pool`], [`record`] or [`concurrent`]), [`dispatcher`]
//! (Cloud Tasks queue limits), [`faults`] (the fault and action timeline)
//! and [`meter`] (what is recorded); in pool mode, [`app_queue`] (the
//! application queue and its client threads). [`event`] lists every event.

pub mod app_queue;
pub mod backend;
pub mod clients;
pub mod concurrent;
pub mod connection;
pub mod dispatcher;
pub mod dist;
pub mod error;
pub mod event;
pub mod faults;
pub mod meter;
pub mod network;
pub mod pool;
pub mod record;
pub mod replay;
pub mod requests;
pub mod run;
pub mod story;
pub mod tier;
pub mod traffic;
