//! The cells of the per-mode result tables (HDF5, NWB): milliseconds,
//! medians with the spread of their rounds, CPU times and ratios of two
//! outcomes.

use crate::workload::{Outcome, Report};

/// Milliseconds with three significant digits.
pub fn ms(seconds: f64) -> String {
    let v = seconds * 1000.0;
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Slowest minus fastest round, in seconds.
pub fn spread(r: &Report) -> f64 {
    let max = r.times.iter().copied().fold(f64::MIN, f64::max);
    let min = r.times.iter().copied().fold(f64::MAX, f64::min);
    max - min
}

/// A time cell: median (fastest–slowest), or n/a, error, –.
pub fn time_cell(o: Option<&Outcome>) -> String {
    match o {
        Some(Outcome::Ok(r)) if r.times.len() > 1 => {
            let max = r.times.iter().copied().fold(f64::MIN, f64::max);
            let min = r.times.iter().copied().fold(f64::MAX, f64::min);
            format!("{} ({}–{})", ms(r.median()), ms(min), ms(max))
        }
        Some(Outcome::Ok(r)) => ms(r.median()),
        Some(Outcome::NotApplicable(_)) => "n/a".into(),
        Some(Outcome::Failed(_)) => "error".into(),
        None => "–".into(),
    }
}

/// A CPU cell: the median CPU time.
pub fn cpu_cell(o: Option<&Outcome>) -> String {
    o.and_then(Outcome::report)
        .map_or_else(String::new, |r| ms(r.median_cpu()))
}

/// `a / b` of two medians.
pub fn ratio(a: Option<&Outcome>, b: Option<&Outcome>) -> String {
    match (a.and_then(Outcome::report), b.and_then(Outcome::report)) {
        (Some(a), Some(b)) => format!("{:.2}", a.median() / b.median()),
        _ => String::new(),
    }
}
