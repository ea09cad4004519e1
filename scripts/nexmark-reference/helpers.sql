-- Helpers of joins_check.sql and updating_check.sql (included with \ir after SET search_path).
-- show(label, views): each view's rows as text, in byte order
CREATE FUNCTION show(label text, VARIADIC views text[]) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE v text; line text;
BEGIN
  RETURN NEXT '-- ' || label;
  FOREACH v IN ARRAY views LOOP
    RETURN NEXT '-- ' || v;
    FOR line IN EXECUTE format(
      'SELECT array_to_string(array(SELECT coalesce(x, ''NULL'') FROM unnest(string_to_array(trim(both ''()'' from t::text), '','', '''')) x), '' '') FROM %I t',
      v) LOOP
      RETURN NEXT line;
    END LOOP;
  END LOOP;
END $$;
-- (composite text form: fields separated by commas, NULL as an empty field, timestamps quoted; fine for these
-- rows, which have no commas, quotes or empty strings in their values)
CREATE FUNCTION show_sorted(label text, VARIADIC views text[]) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE v text; line text;
BEGIN
  RETURN NEXT '-- ' || label;
  FOREACH v IN ARRAY views LOOP
    RETURN NEXT '-- ' || v;
    FOR line IN SELECT x FROM (SELECT replace(s, '"', '') AS x FROM show('x', v) s OFFSET 2) y
                ORDER BY x COLLATE "C" LOOP
      RETURN NEXT line;
    END LOOP;
  END LOOP;
END $$;

