SET extra_float_digits = 3
-- QUERY --
SET application_name = 'PostgreSQL JDBC Driver'
