DROP TABLE IF EXISTS wiki_llm_config_errors;
