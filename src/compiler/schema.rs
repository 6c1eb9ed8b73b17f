//! JSON Schemas of the file kinds, made from their shapes.
