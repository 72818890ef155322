//! Values across the boundary: scenario documents (TOML trees as Python dicts and lists) and
//! the timeseries as flat little-endian columns for `numpy.frombuffer`.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use pfsqos_sim::RunOutput;

/// Deepest nesting of tables and arrays accepted from Python (real scenarios nest 4 deep).
const DEPTH_MAX: usize = 32;

/// A Python dict as a TOML table. Keys must be strings; values bool, int, float, str, list,
/// tuple or dict; a `None` value leaves its key out (the field's default applies).
pub fn py_to_table(dict: &Bound<'_, PyDict>) -> Result<toml::Table, String> {
    table(dict, "", 0)
}

fn table(dict: &Bound<'_, PyDict>, path: &str, depth: usize) -> Result<toml::Table, String> {
    if depth > DEPTH_MAX {
        return Err(format!("`{path}`: nested deeper than {DEPTH_MAX} levels"));
    }
    let mut out = toml::Table::new();
    for (k, v) in dict.iter() {
        let key: String = k
            .extract()
            .map_err(|_| format!("`{path}`: a key is not a string: {}", repr(&k)))?;
        if v.is_none() {
            continue;
        }
        let here = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        out.insert(key, value(&v, &here, depth + 1)?);
    }
    Ok(out)
}

fn value(v: &Bound<'_, PyAny>, path: &str, depth: usize) -> Result<toml::Value, String> {
    if depth > DEPTH_MAX {
        return Err(format!("`{path}`: nested deeper than {DEPTH_MAX} levels"));
    }
    // bool before int: Python's bool is an int.
    if let Ok(b) = v.downcast::<PyBool>() {
        return Ok(toml::Value::Boolean(b.is_true()));
    }
    if v.is_instance_of::<PyInt>() {
        let i: i64 = v.extract().map_err(|_| {
            format!(
                "`{path}`: integer {} is outside TOML's 64-bit range",
                repr(v)
            )
        })?;
        return Ok(toml::Value::Integer(i));
    }
    if let Ok(f) = v.downcast::<PyFloat>() {
        return Ok(toml::Value::Float(f.value()));
    }
    if let Ok(s) = v.downcast::<PyString>() {
        let text: String = s.extract().map_err(|e| format!("`{path}`: {e}"))?;
        return Ok(toml::Value::String(text));
    }
    if let Ok(d) = v.downcast::<PyDict>() {
        return Ok(toml::Value::Table(table(d, path, depth)?));
    }
    let items: Vec<Bound<'_, PyAny>> = if let Ok(l) = v.downcast::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = v.downcast::<PyTuple>() {
        t.iter().collect()
    } else {
        return Err(format!(
            "`{path}`: a {} cannot go into a scenario (bool, int, float, str, list or dict)",
            v.get_type()
                .name()
                .map_or_else(|_| "value".to_string(), |n| n.to_string())
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if item.is_none() {
            return Err(format!("`{path}[{i}]`: None in a list"));
        }
        out.push(value(item, &format!("{path}[{i}]"), depth + 1)?);
    }
    Ok(toml::Value::Array(out))
}

fn repr(v: &Bound<'_, PyAny>) -> String {
    v.repr().map_or_else(|_| "?".to_string(), |r| r.to_string())
}

/// A TOML table as a Python dict (datetimes as their TOML text).
pub fn table_to_py<'py>(py: Python<'py>, t: &toml::Table) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in t {
        d.set_item(k, value_to_py(py, v)?)?;
    }
    Ok(d)
}

fn value_to_py(py: Python<'_>, v: &toml::Value) -> PyResult<PyObject> {
    Ok(match v {
        toml::Value::String(s) => s.into_pyobject(py)?.into_any().unbind(),
        toml::Value::Integer(i) => i.into_pyobject(py)?.into_any().unbind(),
        toml::Value::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        toml::Value::Boolean(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        toml::Value::Datetime(d) => d.to_string().into_pyobject(py)?.into_any().unbind(),
        toml::Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| value_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        toml::Value::Table(t) => table_to_py(py, t)?.into_any().unbind(),
    })
}

/// The timeseries of a run as columns (see `RunData.timeseries_columns`).
pub struct Columns {
    pub time_s: Vec<u8>,
    pub job: Vec<u8>,
    pub ost: Vec<u8>,
    pub bytes: Vec<u8>,
    pub job_names: Vec<String>,
    pub ost_names: Vec<String>,
}

/// One row per (job, OST, bin) that moved bytes, ordered by job (scenario order), OST index,
/// then time; the CSV's per-job `all` rows are sums of these and left out, so that summing a
/// column never counts a byte twice. One pass over the recorded bins.
pub fn timeseries_columns(run: &RunOutput) -> Columns {
    let osts = run
        .jobs
        .iter()
        .map(|j| j.bytes_per_ost_bin.ost_span())
        .max()
        .unwrap_or(0)
        .max(run.osts.len());
    let rows: usize = run
        .jobs
        .iter()
        .flat_map(|j| j.bytes_per_ost_bin.iter())
        .map(|(_, b)| b.iter().filter(|&&x| x != 0).count())
        .sum();
    let mut c = Columns {
        time_s: Vec::with_capacity(rows * 8),
        job: Vec::with_capacity(rows * 4),
        ost: Vec::with_capacity(rows * 4),
        bytes: Vec::with_capacity(rows * 8),
        job_names: run.jobs.iter().map(|j| j.job_id.clone()).collect(),
        ost_names: (0..osts)
            .map(|i| {
                run.osts
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("OST{i:04x}"))
            })
            .collect(),
    };
    for (j, job) in run.jobs.iter().enumerate() {
        for (o, per_bin) in job.bytes_per_ost_bin.iter() {
            for (bin, &b) in per_bin.iter().enumerate() {
                if b == 0 {
                    continue;
                }
                // Exact: bin * bin_ns is far below 2^53 ns (104 days) in any bounded run,
                // and one division by 1e9 rounds once, as parsing the CSV's decimal does.
                let t = (bin as u64 * run.bin_ns) as f64 / 1e9;
                c.time_s.extend_from_slice(&t.to_le_bytes());
                c.job.extend_from_slice(&(j as u32).to_le_bytes());
                c.ost.extend_from_slice(&(o as u32).to_le_bytes());
                c.bytes.extend_from_slice(&b.to_le_bytes());
            }
        }
    }
    debug_assert_eq!(c.bytes.len(), rows * 8);
    c
}
