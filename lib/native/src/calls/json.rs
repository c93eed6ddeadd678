//! Store calls described in JSON (MongoDB Extended JSON values), as the serve protocol sends them
//! and as ops files record them (flashback: a Store-level capture keeps each call by parameter
//! name): the arguments parsed into the record store's types.
use bson::{Bson, Document};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::calls::{Assign, Cond, Filter, Range, Update};

pub fn to_bson(v: &Value) -> Result<Bson> {
    Bson::try_from(v.clone()).map_err(|e| Error::other(format!("not Extended JSON: {v}: {e}")))
}

pub fn to_doc(v: &Value) -> Result<Option<Document>> {
    match v {
        Value::Null => Ok(None),
        other => match to_bson(other)? {
            Bson::Document(d) => Ok(Some(d)),
            b => Err(Error::other(format!("expected a document, got {b}"))),
        },
    }
}

pub fn list_of(v: &Value) -> Result<Vec<Bson>> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items.iter().map(to_bson).collect(),
        other => Ok(vec![to_bson(other)?]),
    }
}

pub fn opt_list(v: &Value) -> Result<Option<Vec<Bson>>> {
    if v.is_null() { Ok(None) } else { list_of(v).map(Some) }
}

pub fn raw_json(doc: &bson::RawDocumentBuf) -> Result<Value> {
    let d = Document::try_from(doc)?;
    Ok(Bson::Document(d).into_canonical_extjson())
}

pub fn index_name(v: &Value) -> Option<&str> {
    v.as_str()
}

pub fn range_of(r: &Value) -> Result<Range> {
    Ok(Range {
        prefix: list_of(&r["prefix"])?,
        low: opt_list(&r["low"])?,
        high: opt_list(&r["high"])?,
        reverse: r["reverse"].as_bool().unwrap_or(false),
        skip: r["skip"].as_u64().unwrap_or(0) as usize,
        limit: r["limit"].as_u64().map(|l| l as usize),
        fields: r["fields"].as_array().map(|f| f.iter().filter_map(|x| x.as_str().map(String::from)).collect()),
        as_or: r["as_or"].as_bool().unwrap_or(false),
    })
}

pub fn docs_of(v: &Value) -> Result<Vec<Document>> {
    v.as_array().cloned().unwrap_or_default().iter().map(|d| to_doc(d).map(|x| x.unwrap_or_default())).collect()
}

pub fn filter_of(args: &Value) -> Result<Filter> {
    match to_doc(&args["where"])? {
        Some(d) => parse_filter(&d),
        None => Ok(Vec::new()),
    }
}

pub fn update_of(args: &Value) -> Result<Update> {
    Ok(Update {
        set: to_doc(&args["set"])?.map(Assign::from), inc: to_doc(&args["inc"])?.map(Assign::from),
        set_on_insert: to_doc(&args["set_on_insert"])?.map(Assign::from),
        replace: to_doc(&args["replace"])?.map(Assign::from), filter: filter_of(args)?,
        upsert: args["upsert"].as_bool().unwrap_or(false), return_before: args["return_before"].as_bool().unwrap_or(false),
    })
}

/// Parses a filter in MongoDB's form: {field: value} or {field: {"$lt": value}}.
pub fn parse_filter(doc: &Document) -> Result<Filter> {
    doc.iter()
        .map(|(field, value)| match value {
            Bson::Document(op) if op.keys().next().map(|k| k.starts_with('$')).unwrap_or(false) => {
                let (name, bound) = op.iter().next().unwrap();
                match name.as_str() {
                    "$lt" if op.len() == 1 => Ok((field.clone(), Cond::Lt(bound.clone()))),
                    "$eq" if op.len() == 1 => Ok((field.clone(), Cond::Eq(bound.clone()))),
                    _ => Err(Error::other(format!("filter on {field}: only $eq and $lt are supported (got {op})"))),
                }
            }
            v => Ok((field.clone(), Cond::Eq(v.clone()))),
        })
        .collect()
}
