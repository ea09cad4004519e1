select current_schema()
